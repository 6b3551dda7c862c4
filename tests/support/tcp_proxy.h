/*
 * A delaying TCP proxy for tests: listens on 127.0.0.1 (a free port) and
 * forwards each accepted connection to a server's port, on a thread of its
 * own (poll-based). Tests put it between a client and redis-server to hold,
 * delay or cut the bytes of chosen connections.
 *
 * Connections are told apart by what their client side sent: a "pubsub"
 * connection has sent SUBSCRIBE or PSUBSCRIBE (the proxy reads the RESP
 * commands going up), a "command" connection never has. rlock's client
 * makes one of each to its address; its pub/sub connection counts as a
 * command connection until its first SUBSCRIBE.
 *
 * Controls take a selector and apply to the matching connections open when
 * they are called; a connection accepted later starts unpaused and without
 * delay. Tests need that: a pub/sub connection made again while the command
 * connection's replies are held must be able to subscribe.
 *
 * Every control is thread-safe. A pause takes effect before the call
 * returns (no byte of that direction is delivered after it); bytes keep
 * being read meanwhile and are held, in order, until the resume. A kill
 * returns once the sockets are closed. Every wait is bounded.
 */
#ifndef RT_TCP_PROXY_H
#define RT_TCP_PROXY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct rt_proxy rt_proxy;

typedef enum rt_proxy_dir {
    RT_PROXY_UP = 0,  /* client -> server: requests */
    RT_PROXY_DOWN = 1 /* server -> client: replies and messages */
} rt_proxy_dir;

typedef enum rt_proxy_sel {
    RT_PROXY_ALL,     /* every connection */
    RT_PROXY_COMMAND, /* those whose client never sent (P)SUBSCRIBE */
    RT_PROXY_PUBSUB   /* those whose client did */
} rt_proxy_sel;

/* Starts a proxy to 127.0.0.1:target_port. NULL (with a message on
 * stderr) when it cannot listen or start its thread. */
rt_proxy *rt_proxy_start(int target_port);

/* Closes every connection, joins the thread (bounded: aborts after 5 s)
 * and frees the proxy. NULL is ignored. */
void rt_proxy_stop(rt_proxy *p);

int rt_proxy_port(const rt_proxy *p);

/* "redis://127.0.0.1:PORT", for rlock_config.address. */
const char *rt_proxy_address(const rt_proxy *p);

/* Holds the bytes of one direction of the matching connections; returns
 * how many connections it applied to. */
int rt_proxy_pause(rt_proxy *p, rt_proxy_sel sel, rt_proxy_dir dir);

/* Releases what a pause held (in order) and lets bytes flow again;
 * returns how many connections it applied to. */
int rt_proxy_resume(rt_proxy *p, rt_proxy_sel sel, rt_proxy_dir dir);

/* Each chunk read from now on in that direction is delivered delay_ms
 * after it arrived (0: at once); order is kept. Returns the number of
 * connections it applied to. */
int rt_proxy_set_delay(rt_proxy *p, rt_proxy_sel sel, rt_proxy_dir dir, int64_t delay_ms);

/* A hostile network peer: direction dir of the matching connections
 * delivers one byte every every_ms (0: all at once again), so that each
 * read gets a byte just inside a socket timeout longer than every_ms. The
 * count of those connections. */
int rt_proxy_set_trickle(rt_proxy *p, rt_proxy_sel sel, rt_proxy_dir dir, int64_t every_ms);

/* As rt_proxy_set_trickle, for the connections accepted from now on (0:
 * they start untrickled again): for a peer that a client meets only once,
 * within one call (rlock_client_create asking a sentinel or a seed). */
void rt_proxy_trickle_new(rt_proxy *p, rt_proxy_dir dir, int64_t every_ms);

/* Closes both sides of the matching connections, dropping what they held;
 * returns how many. */
int rt_proxy_kill(rt_proxy *p, rt_proxy_sel sel);

/* While hold is true, new connections wait in the listen backlog: their
 * TCP connect succeeds, but nothing they send is read (nor a connection
 * to the server made) until hold is false again. Connections open already
 * are not affected. */
void rt_proxy_hold_new(rt_proxy *p, bool hold);

/* The matching open connections, and bytes per direction. */
typedef struct rt_proxy_counts {
    int conns;
    uint64_t forwarded[2]; /* delivered, indexed by rt_proxy_dir */
    uint64_t held[2];      /* read and not delivered yet */
} rt_proxy_counts;

rt_proxy_counts rt_proxy_counts_of(rt_proxy *p, rt_proxy_sel sel);

/* Bytes delivered in one direction by every connection since the start,
 * closed ones included; and connections accepted since the start. */
uint64_t rt_proxy_total_forwarded(rt_proxy *p, rt_proxy_dir dir);
uint64_t rt_proxy_accepted(rt_proxy *p);

/* Polls (every 5 ms, at most timeout_ms) until the matching connections
 * hold at least min_bytes in direction dir. */
bool rt_proxy_wait_held(rt_proxy *p, rt_proxy_sel sel, rt_proxy_dir dir, uint64_t min_bytes,
                        int64_t timeout_ms);

/* Polls until exactly want matching connections are open. */
bool rt_proxy_wait_conns(rt_proxy *p, rt_proxy_sel sel, int want, int64_t timeout_ms);

#endif
