/*
 * Baseline for Benchmarks/MQTTBenchmark.swift: publish throughput of libmosquitto used directly from C.
 * Same shape as the Swift side: MQTT 5, one connection, at most `window` publishes awaiting on_publish
 * (PUBACK at QoS 1, the socket write at QoS 0), libmosquitto's own network thread (mosquitto_loop_start).
 *
 * usage: mqtt_pub_bench host port count qos payload_bytes window
 * prints: msgs_per_sec=<float>
 */
#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int in_flight = 0;
static long completed = 0;
static int connected = 0;

static void on_connect(struct mosquitto *mosq, void *obj, int rc, int flags, const mosquitto_property *props)
{
	(void)mosq; (void)obj; (void)flags; (void)props;
	pthread_mutex_lock(&lock);
	connected = rc == 0 ? 1 : -1;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

static void on_publish(struct mosquitto *mosq, void *obj, int mid, int reason, const mosquitto_property *props)
{
	(void)mosq; (void)obj; (void)mid; (void)reason; (void)props;
	pthread_mutex_lock(&lock);
	in_flight--;
	completed++;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

int main(int argc, char **argv)
{
	if(argc != 7){
		fprintf(stderr, "usage: %s host port count qos payload_bytes window\n", argv[0]);
		return 2;
	}
	const char *host = argv[1];
	int port = atoi(argv[2]);
	long count = atol(argv[3]);
	int qos = atoi(argv[4]);
	int size = atoi(argv[5]);
	int window = atoi(argv[6]);

	mosquitto_lib_init();
	struct mosquitto *mosq = mosquitto_new("c-bench", true, NULL);
	mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
	mosquitto_int_option(mosq, MOSQ_OPT_SEND_MAXIMUM, window);
	mosquitto_connect_v5_callback_set(mosq, on_connect);
	mosquitto_publish_v5_callback_set(mosq, on_publish);
	int rc = mosquitto_connect(mosq, host, port, 30);
	if(rc != MOSQ_ERR_SUCCESS){
		fprintf(stderr, "connect: %s\n", mosquitto_strerror(rc));
		return 1;
	}
	mosquitto_loop_start(mosq);
	pthread_mutex_lock(&lock);
	while(connected == 0) pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
	if(connected < 0){
		fprintf(stderr, "connection refused\n");
		return 1;
	}

	char *payload = malloc((size_t)size);
	memset(payload, 'x', (size_t)size);
	struct timespec start, end;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for(long i = 0; i < count; i++){
		pthread_mutex_lock(&lock);
		while(in_flight >= window) pthread_cond_wait(&changed, &lock);
		in_flight++;  /* before publishing: the callback may run before mosquitto_publish returns */
		pthread_mutex_unlock(&lock);
		rc = mosquitto_publish_v5(mosq, NULL, "bench/c", size, payload, qos, false, NULL);
		if(rc != MOSQ_ERR_SUCCESS){
			fprintf(stderr, "publish: %s\n", mosquitto_strerror(rc));
			return 1;
		}
	}
	pthread_mutex_lock(&lock);
	while(completed < count) pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
	clock_gettime(CLOCK_MONOTONIC, &end);

	double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
	printf("msgs_per_sec=%.1f\n", (double)count / seconds);
	mosquitto_disconnect(mosq);
	mosquitto_loop_stop(mosq, false);
	mosquitto_destroy(mosq);
	mosquitto_lib_cleanup();
	free(payload);
	return 0;
}
