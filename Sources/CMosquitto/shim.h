// libmosquitto, the MQTT client library of the Mosquitto project, for the NotifyBridge
// module (the only Swift module that may import this one).
#ifndef NOTIFYBUS_CMOSQUITTO_SHIM_H
#define NOTIFYBUS_CMOSQUITTO_SHIM_H

#include <mosquitto.h>
#include <mqtt_protocol.h>
// OpenSSL, which libmosquitto uses for TLS: SSL_pending on mosquitto_ssl_get's connection.
#include <openssl/ssl.h>

#endif
