// libmosquitto, the MQTT client library of the Mosquitto project, for the NotifyBridge
// module (the only Swift module that may import this one).
#ifndef NOTIFYBUS_CMOSQUITTO_SHIM_H
#define NOTIFYBUS_CMOSQUITTO_SHIM_H

#include <mosquitto.h>
#include <mqtt_protocol.h>

// OpenSSL's `int SSL_pending(const SSL *ssl)`, for the connection mosquitto_ssl_get returns.
// NotifyBus does not link libssl: libmosquitto, which does, has loaded it, and the bridge
// looks the function up at run time (dlsym), so only this signature is needed here.
typedef int (*notifybus_ssl_pending_function)(const void *ssl);

#endif
