// The C baseline of the bridge benchmark: one MQTT hop between two libmosquitto clients
// (MQTT 5, QoS 1, TCP_NODELAY, each with libmosquitto's own network thread), written
// the way a careful C programmer would.
#ifndef NOTIFYBUS_CMQTTBASELINE_H
#define NOTIFYBUS_CMQTTBASELINE_H

/// Publishes `count` messages on `topic` one at a time through the broker at
/// `host`:`port`, each after the subscriber received the previous one, and writes each
/// publish-to-receive time in microseconds to `samples`. Returns 0, or -1 on error.
int cmqtt_hop_samples(const char *host, int port, const char *topic, int count, double *samples);

/// Publishes `count` messages on `topic` as fast as libmosquitto takes them and returns
/// how many the subscriber received per second, or a negative value on error.
double cmqtt_hop_rate(const char *host, int port, const char *topic, int count);

#endif
