/*
 * The open-loop sender of the spec-rate and over-limit scenarios, in C. No open-loop HTTP load
 * generator (wrk2, vegeta, k6) is available from Debian's packages or npm, and the earlier sender
 * written in TypeScript on Bun was late by 2-3 ms at its p99 on a 2-core machine: its own event
 * loop and collector showed up in every latency it measured. This one is one thread on epoll, with
 * no allocation while it sends.
 *
 * Every request has an intended send time fixed before the run. When it comes, the request is
 * written on an idle keep-alive connection (one request in flight per connection; the pool grows,
 * two connects at a time, while every connection is busy, and a send waits in a first-in
 * first-out backlog only until a connection is free). Latency runs from the INTENDED send time to
 * the last byte of the response, so a stalled server cannot hide its queue (no coordinated
 * omission). The sender's own lateness is recorded separately.
 *
 * Usage: open-loop PLAN RESULTS. Both files are written and read by bench/open-loop.ts, which
 * documents their layout (little-endian, this machine's own). Errors go to stderr, one per line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#define PLAN_MAGIC 0x32504c4fu   /* "OLP2" */
#define RESULT_MAGIC 0x32524c4fu /* "OLR2" */

typedef struct {
  uint32_t magic, port, connections, max_connections, drain_timeout_ms, n_requests, n_sends, fail_write_at;
  uint32_t idle_reuse_ms, reserved;
} plan_header;

typedef struct {
  uint32_t magic, sends, completed, connections_used, connections_retired, reserved;
  double late_start_ms, cpu_s, wall_s, realtime;
} result_header;

enum { CONNECTING, READY, CLOSED };

typedef struct {
  int fd;
  int state;
  int64_t tag; /* the send in flight, or -1 */
  const uint8_t *out;
  size_t out_left;
  char *in;
  size_t in_len, in_cap;
  int64_t idle_since; /* when it last went back to the idle stack (monotonic ns) */
} conn_t;

static uint32_t n_sends, n_requests;
static const uint32_t *offsets, *request_of;
static const uint8_t *request_bytes;
static int64_t *at_ns; /* intended send times, CLOCK_MONOTONIC ns */
static double epoch_minus_mono_ms;

static uint16_t *status_of;
static uint8_t *retry_of;
static double *latency_ms, *lag_ms, *write_delay_ms, *sent_epoch, *recv_epoch;

static conn_t *conns;
static uint32_t n_conns, max_conns;
static uint32_t *idle;
static uint32_t n_idle;
static uint32_t *backlog;
static uint32_t backlog_head, backlog_tail;
static int opening;
static uint32_t sent, completed, abandoned, retired;
static int64_t idle_reuse_ns; /* a connection idle longer than this is closed, not reused */
/* Tests only: the n-th write fails as on a connection the server has reset (0: none). */
static uint32_t fail_write_at, writes;
static int ep;
static struct sockaddr_in server;

static int64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static double to_epoch_ms(int64_t mono) { return (double)mono / 1e6 + epoch_minus_mono_ms; }

/* CLOCK_REALTIME minus CLOCK_MONOTONIC in ms, from the tightest of 50 paired readings. */
static double clock_offset_ms(void) {
  double best = INFINITY, offset = 0;
  for (int i = 0; i < 50; i++) {
    struct timespec r;
    int64_t a = mono_ns();
    clock_gettime(CLOCK_REALTIME, &r);
    int64_t b = mono_ns();
    if (b - a < best) {
      best = (double)(b - a);
      offset = ((double)r.tv_sec * 1e3 + (double)r.tv_nsec / 1e6) - (double)(a + b) / 2e6;
    }
  }
  return offset;
}

static void sleep_until(int64_t mono) {
  struct timespec t = {.tv_sec = mono / 1000000000, .tv_nsec = mono % 1000000000};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
  }
}

static void *must_alloc(size_t size) {
  void *p = calloc(1, size > 0 ? size : 1);
  if (!p) {
    fprintf(stderr, "error: out of memory\n");
    exit(2);
  }
  return p;
}

static void fail_conn(conn_t *c, const char *why) {
  if (c->state == CLOSED) return;
  if (c->state == CONNECTING) opening--;
  fprintf(stderr, "connection error: %s\n", why);
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->state = CLOSED;
  if (c->tag >= 0) {
    abandoned++;
    c->tag = -1;
  }
}

static void watch(conn_t *c, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.u32 = (uint32_t)(c - conns)};
  epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Writes what is left of the connection's request; true unless the connection failed. */
static int flush_out(conn_t *c) {
  while (c->out_left > 0) {
    ssize_t w = send(c->fd, c->out, c->out_left, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        watch(c, EPOLLIN | EPOLLOUT);
        return 1;
      }
      if (errno == EINTR) continue;
      fail_conn(c, strerror(errno));
      return 0;
    }
    c->out += w;
    c->out_left -= (size_t)w;
  }
  return 1;
}

/* Writes send `i` on a ready connection; false (nothing counted) when the connection failed. */
static int write_send(conn_t *c, uint32_t i) {
  if (fail_write_at != 0 && ++writes == fail_write_at) {
    fail_conn(c, "injected write failure (the plan's fail_write_at)");
    return 0;
  }
  int64_t t = mono_ns();
  uint32_t r = request_of[i];
  c->out = request_bytes + offsets[r];
  c->out_left = offsets[r + 1] - offsets[r];
  if (!flush_out(c)) return 0;
  c->tag = i;
  write_delay_ms[i] = (double)(t - at_ns[i]) / 1e6;
  sent_epoch[i] = to_epoch_ms(t);
  sent++;
  return 1;
}

/* A free connection takes the oldest waiting send, else goes back to the idle stack. */
static void release(conn_t *c) {
  while (backlog_head < backlog_tail) {
    if (c->state != READY) return;
    /* A send the connection failed on stays first in line for the next connection. */
    if (write_send(c, backlog[backlog_head])) {
      backlog_head++;
      return;
    }
  }
  if (c->state == READY) {
    c->idle_since = mono_ns();
    idle[n_idle++] = (uint32_t)(c - conns);
  }
}

/* Closes a connection of ours that has sat idle too long to reuse safely (no error: our choice). */
static void retire(conn_t *c) {
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->state = CLOSED;
  retired++;
}

static conn_t *open_conn(int blocking) {
  if (n_conns >= max_conns) return NULL;
  int fd = socket(AF_INET, SOCK_STREAM | (blocking ? 0 : SOCK_NONBLOCK), 0);
  if (fd < 0) {
    fprintf(stderr, "connection error: socket: %s\n", strerror(errno));
    return NULL;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  conn_t *c = &conns[n_conns++];
  memset(c, 0, sizeof *c);
  c->fd = fd;
  c->tag = -1;
  c->in_cap = 4096;
  c->in = must_alloc(c->in_cap);
  int rc = connect(fd, (struct sockaddr *)&server, sizeof server);
  if (rc < 0 && !(errno == EINPROGRESS && !blocking)) {
    fprintf(stderr, "connection error: connect: %s\n", strerror(errno));
    close(fd);
    c->state = CLOSED;
    return NULL;
  }
  if (blocking) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  c->state = rc == 0 ? READY : CONNECTING;
  if (c->state == CONNECTING) opening++;
  struct epoll_event ev = {.events = c->state == READY ? EPOLLIN : EPOLLOUT, .data.u32 = (uint32_t)(c - conns)};
  epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  return c;
}

static void dispatch(uint32_t i, int64_t now) {
  lag_ms[i] = (double)(now - at_ns[i]) / 1e6;
  while (n_idle > 0) {
    conn_t *c = &conns[idle[--n_idle]];
    if (c->state != READY) continue;
    /*
     * A connection idle for longer than the plan allows is closed, not written on: a server closes
     * idle keep-alive connections (svc after 10 s), and a request written as its close crosses
     * ours is lost. Clients' pools do the same (undici keeps an idle socket 4 s).
     */
    if (now - c->idle_since > idle_reuse_ns) {
      retire(c);
      continue;
    }
    if (write_send(c, i)) return;
  }
  backlog[backlog_tail++] = i;
  /* Grow gently: a short stall should not turn into a burst of connects. */
  if (opening < 2) {
    conn_t *c = open_conn(0);
    /* Connected at once (no EINPROGRESS): no event will announce it, so it takes its send now. */
    if (c && c->state == READY) release(c);
  }
}

/* The header block's value of `name` (lower case, with its colon), or NULL. */
static const char *header(const char *head, size_t len, const char *name) {
  size_t n = strlen(name);
  for (size_t p = 0; p + 2 + n <= len; p++) {
    if (head[p] == '\r' && head[p + 1] == '\n' && strncasecmp(head + p + 2, name, n) == 0) return head + p + 2 + n;
  }
  return NULL;
}

/* End of a chunked body starting at `p`, or -1 while not all of it has arrived. */
static long chunked_end(const char *buf, size_t len, size_t p) {
  for (;;) {
    const char *line_end = memmem(buf + p, len - p, "\r\n", 2);
    if (!line_end) return -1;
    long size = strtol(buf + p, NULL, 16);
    if (size == 0) {
      size_t end = (size_t)(line_end - buf) + 4;
      return end <= len ? (long)end : -1;
    }
    p = (size_t)(line_end - buf) + 2 + (size_t)size + 2;
    if (p > len) return -1;
  }
}

/* Reads what arrived; records the response once it is whole and frees the connection. */
static void on_readable(conn_t *c) {
  for (;;) {
    if (c->in_len == c->in_cap) {
      c->in_cap *= 2;
      c->in = realloc(c->in, c->in_cap);
      if (!c->in) {
        fprintf(stderr, "error: out of memory\n");
        exit(2);
      }
    }
    ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
    if (r == 0) {
      fail_conn(c, "closed by the server");
      return;
    }
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      fail_conn(c, strerror(errno));
      return;
    }
    c->in_len += (size_t)r;
  }
  int64_t now = mono_ns();
  const char *end_of_head = memmem(c->in, c->in_len, "\r\n\r\n", 4);
  if (!end_of_head) return;
  size_t head_len = (size_t)(end_of_head - c->in);
  size_t body = head_len + 4;
  long end;
  const char *cl = header(c->in, head_len, "content-length:");
  if (cl) {
    end = (long)body + strtol(cl, NULL, 10);
  } else if (header(c->in, head_len, "transfer-encoding: chunked")) {
    end = chunked_end(c->in, c->in_len, body);
    if (end < 0) return;
  } else {
    end = (long)body;
  }
  if ((size_t)end > c->in_len) return;
  if (c->tag < 0 || (size_t)end != c->in_len) {
    fail_conn(c, "unexpected bytes from the server");
    return;
  }
  uint32_t i = (uint32_t)c->tag;
  status_of[i] = (uint16_t)(c->in_len >= 12 ? strtol(c->in + 9, NULL, 10) : 0);
  retry_of[i] = header(c->in, head_len, "retry-after:") != NULL;
  latency_ms[i] = (double)(now - at_ns[i]) / 1e6;
  recv_epoch[i] = to_epoch_ms(now);
  completed++;
  c->tag = -1;
  c->in_len = 0;
  release(c);
}

static void on_event(conn_t *c, uint32_t events) {
  if (c->state == CLOSED) return;
  if (c->state == CONNECTING) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0 || (events & (EPOLLERR | EPOLLHUP))) {
      fail_conn(c, err ? strerror(err) : "connect failed");
      return;
    }
    opening--;
    c->state = READY;
    watch(c, EPOLLIN);
    release(c);
    return;
  }
  if (events & EPOLLIN) {
    on_readable(c);
    if (c->state == CLOSED) return;
  } else if (events & (EPOLLERR | EPOLLHUP)) {
    fail_conn(c, "connection reset");
    return;
  }
  if ((events & EPOLLOUT) && c->out_left > 0) {
    if (flush_out(c) && c->out_left == 0) watch(c, EPOLLIN);
  }
}

static uint8_t *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  struct stat st;
  fstat(fileno(f), &st);
  uint8_t *buf = must_alloc((size_t)st.st_size);
  size_t got = fread(buf, 1, (size_t)st.st_size, f);
  fclose(f);
  *size = got;
  return got == (size_t)st.st_size ? buf : NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: open-loop PLAN RESULTS\n");
    return 2;
  }
  size_t size;
  uint8_t *plan = read_file(argv[1], &size);
  plan_header h;
  if (!plan || size < sizeof h) {
    fprintf(stderr, "error: cannot read the plan %s\n", argv[1]);
    return 2;
  }
  memcpy(&h, plan, sizeof h);
  size_t need = sizeof h + (size_t)h.n_sends * 12 + ((size_t)h.n_requests + 1) * 4;
  if (h.magic != PLAN_MAGIC || size < need) {
    fprintf(stderr, "error: malformed plan %s\n", argv[1]);
    return 2;
  }
  n_sends = h.n_sends;
  n_requests = h.n_requests;
  fail_write_at = h.fail_write_at;
  idle_reuse_ns = (int64_t)h.idle_reuse_ms * 1000000;
  const double *send_at_epoch = (const double *)(plan + sizeof h);
  request_of = (const uint32_t *)(plan + sizeof h + (size_t)n_sends * 8);
  offsets = request_of + n_sends;
  request_bytes = (const uint8_t *)(offsets + n_requests + 1);
  if (size < need + offsets[n_requests]) {
    fprintf(stderr, "error: malformed plan %s\n", argv[1]);
    return 2;
  }
  for (uint32_t r = 0; r < n_requests; r++) {
    if (offsets[r + 1] < offsets[r]) {
      fprintf(stderr, "error: malformed plan %s: request offsets go backwards\n", argv[1]);
      return 2;
    }
  }
  for (uint32_t i = 0; i < n_sends; i++) {
    if (request_of[i] >= n_requests) {
      fprintf(stderr, "error: send %u names request %u of %u\n", i, request_of[i], n_requests);
      return 2;
    }
  }

  /* Timers fire when asked, not up to 50 us later (the default slack). */
  prctl(PR_SET_TIMERSLACK, 1UL);
  /*
   * A real-time thread runs as soon as its send is due or its response arrives, instead of
   * waiting for the scheduler to take the core from the server (or anything else) it shares
   * with: on a 2-core machine that wait was the sender's own lateness. It sleeps between sends,
   * so it takes little from the server. Without the privilege it runs as an ordinary thread and
   * says so.
   */
  struct sched_param rt = {.sched_priority = 10};
  int realtime = sched_setscheduler(0, SCHED_FIFO, &rt) == 0;
  if (!realtime) fprintf(stderr, "note: not real-time (%s): the sender may be late when the cores are busy\n", strerror(errno));
  epoch_minus_mono_ms = clock_offset_ms();
  at_ns = must_alloc((size_t)n_sends * 8);
  for (uint32_t i = 0; i < n_sends; i++) at_ns[i] = (int64_t)((send_at_epoch[i] - epoch_minus_mono_ms) * 1e6);
  status_of = must_alloc((size_t)n_sends * 2);
  retry_of = must_alloc(n_sends);
  double **arrays[] = {&latency_ms, &lag_ms, &write_delay_ms, &sent_epoch, &recv_epoch};
  for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a++) {
    *arrays[a] = must_alloc((size_t)n_sends * 8);
    for (uint32_t i = 0; i < n_sends; i++) (*arrays[a])[i] = NAN;
  }
  max_conns = h.max_connections > h.connections ? h.max_connections : h.connections;
  conns = must_alloc((size_t)max_conns * sizeof *conns);
  idle = must_alloc((size_t)max_conns * 4);
  backlog = must_alloc((size_t)n_sends * 4);
  server.sin_family = AF_INET;
  server.sin_port = htons((uint16_t)h.port);
  server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ep = epoll_create1(0);

  /* Connect shortly before the first send: servers close idle keep-alive connections. */
  int64_t first = n_sends > 0 ? at_ns[0] : mono_ns();
  if (first - mono_ns() > 500000000) sleep_until(first - 400000000);
  for (uint32_t k = 0; k < h.connections; k++) {
    conn_t *c = open_conn(1);
    if (c) {
      c->idle_since = mono_ns();
      idle[n_idle++] = (uint32_t)(c - conns);
    }
  }
  if (n_idle == 0) {
    fprintf(stderr, "error: no connection to 127.0.0.1:%u\n", h.port);
    return 1;
  }
  sleep_until(first);
  int64_t start = mono_ns();
  double late_start_ms = (double)(start - first) / 1e6;
  if (late_start_ms < 0) late_start_ms = 0;
  struct rusage ru0, ru1;
  getrusage(RUSAGE_SELF, &ru0);

  struct epoll_event events[256];
  uint32_t next = 0;
  int64_t drain_deadline = -1;
  for (;;) {
    int64_t now = mono_ns();
    while (next < n_sends && at_ns[next] <= now) dispatch(next++, now);
    if (next >= n_sends) {
      if (completed + abandoned >= sent && backlog_head >= backlog_tail) break;
      if (drain_deadline < 0) drain_deadline = now + (int64_t)h.drain_timeout_ms * 1000000;
      if (now >= drain_deadline) break;
    }
    int64_t wake = next < n_sends ? at_ns[next] : drain_deadline;
    int64_t wait = wake - now;
    struct timespec timeout = {.tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000};
    int ready = epoll_pwait2(ep, events, 256, &timeout, NULL);
    if (ready < 0 && errno != EINTR) {
      fprintf(stderr, "error: epoll: %s\n", strerror(errno));
      return 1;
    }
    for (int e = 0; e < ready; e++) on_event(&conns[events[e].data.u32], events[e].events);
  }

  int64_t stop = mono_ns();
  getrusage(RUSAGE_SELF, &ru1);
  double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
               (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
  for (uint32_t k = 0; k < n_conns; k++) {
    if (conns[k].state != CLOSED) close(conns[k].fd);
  }

  result_header out = {
      .magic = RESULT_MAGIC,
      .sends = sent,
      .completed = completed,
      .connections_used = n_conns,
      .connections_retired = retired,
      .late_start_ms = late_start_ms,
      .cpu_s = cpu,
      .wall_s = (double)(stop - start) / 1e9,
      .realtime = realtime,
  };
  FILE *f = fopen(argv[2], "wb");
  if (!f) {
    fprintf(stderr, "error: cannot write %s: %s\n", argv[2], strerror(errno));
    return 1;
  }
  int ok = fwrite(&out, sizeof out, 1, f) == 1;
  for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a++) ok &= fwrite(*arrays[a], 8, n_sends, f) == n_sends;
  ok &= fwrite(status_of, 2, n_sends, f) == n_sends;
  ok &= fwrite(retry_of, 1, n_sends, f) == n_sends;
  ok &= fclose(f) == 0;
  if (!ok) {
    fprintf(stderr, "error: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}
