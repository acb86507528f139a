#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

// SSL_set_tlsext_host_name is a macro over SSL_ctrl, which Swift does not import: the name sent as SNI.
static inline long blegw_ssl_set_sni(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
