/* iofp capture: one record per completed block request, one per fsync-family syscall.
 *
 * Requests are keyed by their `struct request *` (raw tracepoints hand us the pointer): a merge, a
 * requeue or two requests on the same sector cannot be confused, and a pointer key is far cheaper to
 * hash than (dev, sector). The kernel headers bcc compiles against may be older than the running
 * kernel, so no struct layout from them is used: every field offset below is a -D define that the
 * loader (bpf/loader.py) computed from the running kernel's BTF.
 *
 * Defines from the loader:
 *   IOFP_OFF_RQ_Q, IOFP_OFF_RQ_CMD_FLAGS, IOFP_OFF_RQ_DATA_LEN, IOFP_OFF_RQ_SECTOR   struct request
 *   IOFP_OFF_Q_DISK                                                                 struct request_queue
 *   IOFP_OFF_DISK_MAJOR, IOFP_OFF_DISK_FIRST_MINOR                                  struct gendisk
 *   IOFP_REQ_OP_MASK, IOFP_REQ_OP_FLUSH, IOFP_REQ_PREFLUSH                          enum req_op / req_flag_bits
 *   IOFP_IO_REC_SIZE, IOFP_SYNC_REC_SIZE     the numpy record sizes (layout check)
 *   IOFP_FLUSH_NS                             a batch older than this is sent on the next event
 *   IOFP_MAX_INFLIGHT                         entries in the in-flight request map
 *   IOFP_HAVE_IO_START                        block_io_start exists (else block_rq_insert stands in)
 *   IOFP_FILTER_DEV                           only devices in the `devs` map
 *   IOFP_FILTER_PID=N, IOFP_FILTER_COMM + IOFP_COMM_W0/W1   submitter filters (two u64 words of comm)
 *   IOFP_SYSCALLS                             also trace the fsync-family syscalls
 */
#include <uapi/linux/ptrace.h>
#include "iofp_record.h"

_Static_assert(sizeof(struct iofp_io_rec) == IOFP_IO_REC_SIZE, "iofp_io_rec differs from bpf/record.py");
_Static_assert(sizeof(struct iofp_sync_rec) == IOFP_SYNC_REC_SIZE, "iofp_sync_rec differs from bpf/record.py");
_Static_assert((IOFP_IO_BATCH & (IOFP_IO_BATCH - 1)) == 0, "IOFP_IO_BATCH must be a power of two");
_Static_assert((IOFP_SYNC_BATCH & (IOFP_SYNC_BATCH - 1)) == 0, "IOFP_SYNC_BATCH must be a power of two");

/* A request between block_io_start and block_rq_complete. */
struct iofp_req {
	u64 queue_ns;
	u64 issue_ns; /* 0 until issued */
	u64 sector;
	u32 bytes;
	u32 cmd_flags;
	u32 dev;
	u32 pid;
	s32 inflight;
	u32 done; /* bytes completed so far (a request may complete in parts) */
	char comm[IOFP_COMM_LEN];
};

/* Who asked for the flush that a flush-machinery request (rwbs FF, issued by a kworker) performs. */
struct iofp_flusher {
	u64 rq; /* the submitter's PREFLUSH request, which completes after the flush */
	u64 queue_ns;
	u32 pid;
	u32 _pad;
	char comm[IOFP_COMM_LEN];
};

struct iofp_sync_start {
	u64 enter_ns;
	s32 fd;
	u32 call;
};

BPF_HASH(reqs, u64, struct iofp_req, IOFP_MAX_INFLIGHT);
BPF_HASH(inflight, u32, s64, 1024);
BPF_HASH(flushers, u32, struct iofp_flusher, 1024);
BPF_PERCPU_ARRAY(counters, u64, IOFP_NCOUNTERS);
BPF_PERCPU_ARRAY(io_batch, struct iofp_io_batch, 1);
BPF_PERCPU_ARRAY(sync_batch, struct iofp_sync_batch, 1);
BPF_PERCPU_ARRAY(busy, u32, 1); /* a batch is being appended to on this CPU */
BPF_RINGBUF_OUTPUT(events, IOFP_RINGBUF_PAGES);
#ifdef IOFP_FILTER_DEV
BPF_HASH(devs, u32, u8, 256);
#endif
#ifdef IOFP_SYSCALLS
BPF_HASH(sync_calls, u32, struct iofp_sync_start, 8192);
#endif

static __always_inline void count(u32 idx, u64 n)
{
	u64 *c = counters.lookup(&idx);
	if (c)
		*c += n; /* per-CPU: no atomics needed */
}

static __always_inline u32 rq_dev(u64 rq)
{
	/* The same dev the block tracepoints print: rq->q->disk, MKDEV(major, first_minor). */
	u64 q = 0, disk = 0;
	int major = 0, minor = 0;

	bpf_probe_read_kernel(&q, sizeof(q), (void *)(rq + IOFP_OFF_RQ_Q));
	if (!q)
		return 0;
	bpf_probe_read_kernel(&disk, sizeof(disk), (void *)(q + IOFP_OFF_Q_DISK));
	if (!disk)
		return 0;
	bpf_probe_read_kernel(&major, sizeof(major), (void *)(disk + IOFP_OFF_DISK_MAJOR));
	bpf_probe_read_kernel(&minor, sizeof(minor), (void *)(disk + IOFP_OFF_DISK_FIRST_MINOR));
	return ((u32)major << 20) | (u32)minor;
}

static __always_inline bool dev_wanted(u32 dev)
{
#ifdef IOFP_FILTER_DEV
	return devs.lookup(&dev) != NULL;
#else
	return dev != 0;
#endif
}

static __always_inline bool submitter_wanted(u32 pid, const char *comm)
{
#ifdef IOFP_FILTER_PID
	if (pid != IOFP_FILTER_PID)
		return false;
#endif
#ifdef IOFP_FILTER_COMM
	u64 w[2] = {};
	__builtin_memcpy(w, comm, sizeof(w));
	if (w[0] != IOFP_COMM_W0 || w[1] != IOFP_COMM_W1)
		return false;
#endif
	return true;
}

/* ---- batching --------------------------------------------------------------------------------- */

/* User space drains the ring on its own 100 ms tick, so a batch need not wake it: BPF_RB_NO_WAKEUP
 * saves a wakeup per batch (thousands per second at full rate). */
#define IOFP_RB_FLAGS BPF_RB_NO_WAKEUP

/* A record that cannot go into this CPU's batch because we interrupted the code appending to it or
 * sending it (a completion arriving in an interrupt): sent on its own, as a batch of one. */
struct iofp_io_single {
	struct iofp_batch_hdr hdr;
	struct iofp_io_rec rec;
};
struct iofp_sync_single {
	struct iofp_batch_hdr hdr;
	struct iofp_sync_rec rec;
};

static __always_inline void send_io(struct iofp_io_batch *b)
{
	u32 n = b->hdr.count;
	if (n == 0)
		return;
	if (n > IOFP_IO_BATCH)
		n = IOFP_IO_BATCH;
	b->hdr.kind = IOFP_KIND_IO;
	u64 size = sizeof(struct iofp_batch_hdr) + (u64)n * sizeof(struct iofp_io_rec);
	if (size > sizeof(*b))
		size = sizeof(*b);
	if (events.ringbuf_output(b, size, IOFP_RB_FLAGS) == 0)
		count(IOFP_CNT_IO_RECORDS, n);
	else
		count(IOFP_CNT_LOST_IO_RINGBUF, n);
	b->hdr.count = 0;
}

static __always_inline void send_sync(struct iofp_sync_batch *b)
{
	u32 n = b->hdr.count;
	if (n == 0)
		return;
	if (n > IOFP_SYNC_BATCH)
		n = IOFP_SYNC_BATCH;
	b->hdr.kind = IOFP_KIND_SYNC;
	u64 size = sizeof(struct iofp_batch_hdr) + (u64)n * sizeof(struct iofp_sync_rec);
	if (size > sizeof(*b))
		size = sizeof(*b);
	if (events.ringbuf_output(b, size, IOFP_RB_FLAGS) == 0)
		count(IOFP_CNT_SYNC_RECORDS, n);
	else
		count(IOFP_CNT_LOST_SYNC_RINGBUF, n);
	b->hdr.count = 0;
}

/* Run by user space on each CPU (BPF_PROG_TEST_RUN with BPF_F_TEST_RUN_ON_CPU: raw_tp test runs,
 * v5.10, 1b4d60ec162f) so that an idle device does not leave records sitting in a half-full batch.
 * It runs in an IPI (or with preemption off on the calling CPU), so it may interrupt an append on
 * this CPU, and a completion interrupt may arrive while it runs: whoever finds the per-CPU busy flag
 * set keeps its hands off the batch (this flush backs off; a completion sends its record alone).
 * args[0] != 0: send regardless of age. */
int iofp_flush(struct bpf_raw_tracepoint_args *ctx)
{
	u32 zero = 0;
	u32 *bz = busy.lookup(&zero);
	if (!bz)
		return 0;
	if (*bz) {
		count(IOFP_CNT_FLUSH_BUSY, 1);
		return 0;
	}
	*(volatile u32 *)bz = 1; /* an interrupting completion must not touch the batches now */
	u64 now = bpf_ktime_get_ns();
	bool force = ctx->args[0] != 0;
	struct iofp_io_batch *ib = io_batch.lookup(&zero);
	if (ib && ib->hdr.count && (force || now - ib->hdr.first_ns >= IOFP_FLUSH_NS))
		send_io(ib);
	struct iofp_sync_batch *sb = sync_batch.lookup(&zero);
	if (sb && sb->hdr.count && (force || now - sb->hdr.first_ns >= IOFP_FLUSH_NS))
		send_sync(sb);
	*(volatile u32 *)bz = 0;
	return 0;
}

static __always_inline void fill_io(struct iofp_io_rec *rec, struct iofp_req *r, u64 now, u8 error)
{
	rec->issue_ns = r->issue_ns;
	rec->queue_ns = r->queue_ns;
	rec->complete_ns = now;
	rec->sector = r->sector;
	rec->bytes = r->bytes;
	rec->cmd_flags = r->cmd_flags;
	rec->dev = r->dev;
	rec->pid = r->pid;
	rec->inflight = r->inflight;
	rec->error = error;
	rec->_pad = 0;
	__builtin_memcpy(rec->comm, r->comm, sizeof(rec->comm));
}

/* Hand one finished request to user space: appended to this CPU's batch, or sent alone when we
 * interrupted someone appending to it. `complete_ns` 0: its completion never reached us. */
static __always_inline void emit_io(struct iofp_req *r, u64 complete_ns, u8 error)
{
	if (!submitter_wanted(r->pid, r->comm))
		return;
	u32 zero = 0;
	u64 now = complete_ns ? complete_ns : bpf_ktime_get_ns();
	u32 *bz = busy.lookup(&zero);
	struct iofp_io_batch *b = io_batch.lookup(&zero);
	if (bz && b && !*(volatile u32 *)bz) {
		*(volatile u32 *)bz = 1;
		u32 i = b->hdr.count;
		if (i == 0)
			b->hdr.first_ns = now;
		fill_io(&b->recs[i & (IOFP_IO_BATCH - 1)], r, complete_ns, error);
		b->hdr.count = i + 1;
		if (i + 1 >= IOFP_IO_BATCH || now - b->hdr.first_ns >= IOFP_FLUSH_NS)
			send_io(b);
		*(volatile u32 *)bz = 0;
	} else if (bz) {
		struct iofp_io_single one = {};
		one.hdr.kind = IOFP_KIND_IO;
		one.hdr.count = 1;
		one.hdr.first_ns = now;
		fill_io(&one.rec, r, complete_ns, error);
		if (events.ringbuf_output(&one, sizeof(one), IOFP_RB_FLAGS) == 0)
			count(IOFP_CNT_IO_RECORDS, 1);
		else
			count(IOFP_CNT_LOST_IO_RINGBUF, 1);
	}
}

/* ---- block requests --------------------------------------------------------------------------- */
/* Raw tracepoint programs, attached by the loader (bpf/loader.py) by name, so that the capture
 * starts at a known instant rather than when bcc finishes compiling. */

static __always_inline int track_start(u64 rq)
{
	u32 dev = rq_dev(rq);
	if (!dev_wanted(dev))
		return 0;
	struct iofp_req r = {};
	r.queue_ns = bpf_ktime_get_ns();
	r.dev = dev;
	r.pid = bpf_get_current_pid_tgid() >> 32;
	bpf_get_current_comm(&r.comm, sizeof(r.comm));
	if (reqs.insert(&rq, &r) != 0) {
		/* The pointer is still tracked: a request that used it before was issued, but its
		 * block_rq_complete never ran our program (seen on 6.18: ~1 in 10^6 under load, with no
		 * recursion miss). It did complete (the block layer reuses a request only after that):
		 * send it now with its completion time unknown, so that it is neither dropped silently
		 * nor left counted in flight, and count the loss. */
		struct iofp_req *old = reqs.lookup(&rq);
		if (old && old->issue_ns) {
			u32 odev = old->dev;
			s64 *n = inflight.lookup(&odev);
			if (n)
				__sync_fetch_and_add(n, -1);
			emit_io(old, 0, 0);
			count(IOFP_CNT_LOST_COMPLETIONS, 1);
		}
		if (reqs.update(&rq, &r) != 0) {
			count(IOFP_CNT_LOST_IO_MAP_FULL, 1);
			return 0;
		}
	}
	/* An fsync on a device with a volatile cache arrives as a PREFLUSH request from the
	 * application, but the flush itself is a separate request (rwbs FF) that blk-flush issues
	 * from a kworker: remember who asked, per device, until that flush is issued. */
	u32 flags = 0;
	bpf_probe_read_kernel(&flags, sizeof(flags), (void *)(rq + IOFP_OFF_RQ_CMD_FLAGS));
	if (flags & IOFP_REQ_PREFLUSH) {
		struct iofp_flusher f = {};
		f.rq = rq;
		f.queue_ns = r.queue_ns;
		f.pid = r.pid;
		__builtin_memcpy(f.comm, r.comm, sizeof(f.comm));
		flushers.update(&dev, &f); /* BPF_ANY: the newest asker; best effort */
	}
	return 0;
}

#ifdef IOFP_HAVE_IO_START
/* block_io_start: v6.5, 5a80bd075f3b. Fires in the submitter's context when a bio becomes a request. */
int iofp_io_start(struct bpf_raw_tracepoint_args *ctx)
{
	return track_start(ctx->args[0]);
}
#else
/* Kernels before v6.5: insertion into the scheduler is the earliest per-request point; the
 * submitter is right for plugged/scheduled I/O issued from the application's context. */
int iofp_rq_insert(struct bpf_raw_tracepoint_args *ctx)
{
	u64 rq = ctx->args[0];
	if (reqs.lookup(&rq))
		return 0;
	return track_start(rq);
}
#endif

int iofp_rq_issue(struct bpf_raw_tracepoint_args *ctx)
{
	u64 rq = ctx->args[0];
	u64 now = bpf_ktime_get_ns();
	u32 flags = 0;
	bpf_probe_read_kernel(&flags, sizeof(flags), (void *)(rq + IOFP_OFF_RQ_CMD_FLAGS));

	struct iofp_req *r = reqs.lookup(&rq);
	if (!r) {
		/* Started before the capture, or a request the block layer made itself (a flush). */
		u32 dev = rq_dev(rq);
		if (!dev_wanted(dev))
			return 0;
		struct iofp_req fresh = {};
		fresh.dev = dev;
		if ((flags & IOFP_REQ_OP_MASK) == IOFP_REQ_OP_FLUSH) {
			struct iofp_flusher *f = flushers.lookup(&dev);
			if (f) {
				fresh.pid = f->pid;
				fresh.queue_ns = f->queue_ns;
				__builtin_memcpy(fresh.comm, f->comm, sizeof(fresh.comm));
				flushers.delete(&dev);
			}
		}
		if (reqs.update(&rq, &fresh) != 0) {
			count(IOFP_CNT_LOST_IO_MAP_FULL, 1);
			return 0;
		}
		r = reqs.lookup(&rq);
		if (!r)
			return 0;
	}
	if (r->issue_ns) {
		/* Re-issued without a requeue event: it is still counted once in flight. */
		r->issue_ns = now;
		return 0;
	}
	r->issue_ns = now;
	r->cmd_flags = flags;
	bpf_probe_read_kernel(&r->bytes, sizeof(r->bytes), (void *)(rq + IOFP_OFF_RQ_DATA_LEN));
	bpf_probe_read_kernel(&r->sector, sizeof(r->sector), (void *)(rq + IOFP_OFF_RQ_SECTOR));

	u32 dev = r->dev;
	s64 *n = inflight.lookup(&dev);
	if (!n) {
		s64 zero = 0;
		inflight.update(&dev, &zero); /* BPF_ANY; a racing insert of 0 is harmless */
		n = inflight.lookup(&dev);
		if (!n)
			return 0;
	}
	r->inflight = __sync_fetch_and_add(n, 1) + 1;
	return 0;
}

int iofp_rq_requeue(struct bpf_raw_tracepoint_args *ctx)
{
	/* Back to the queue: it will be issued again, and counted in flight again then. */
	u64 rq = ctx->args[0];
	struct iofp_req *r = reqs.lookup(&rq);
	if (!r || !r->issue_ns)
		return 0;
	u32 dev = r->dev;
	s64 *n = inflight.lookup(&dev);
	if (n)
		__sync_fetch_and_add(n, -1);
	r->issue_ns = 0;
	r->inflight = 0;
	return 0;
}

int iofp_rq_merge(struct bpf_raw_tracepoint_args *ctx)
{
	/* Merged into another request before issue: it will never complete on its own. */
	u64 rq = ctx->args[0];
	reqs.delete(&rq);
	return 0;
}

int iofp_rq_complete(struct bpf_raw_tracepoint_args *ctx)
{
	u64 rq = ctx->args[0];
	struct iofp_req *r = reqs.lookup(&rq);
	if (!r) {
		/* Issued before the capture started (the only other way: a device we do not trace). */
		if (dev_wanted(rq_dev(rq)))
			count(IOFP_CNT_UNMATCHED_COMPLETIONS, 1);
		return 0;
	}
	count(IOFP_CNT_COMPLETIONS, 1);
	u32 dev = r->dev;
	if (!r->issue_ns) {
		/* e.g. an empty PREFLUSH request: blk-flush completes it once its flush is done. */
		struct iofp_flusher *f = flushers.lookup(&dev);
		if (f && f->rq == rq)
			flushers.delete(&dev);
		count(IOFP_CNT_COMPLETED_UNISSUED, 1);
		reqs.delete(&rq);
		return 0;
	}
	/* block_rq_complete(rq, blk_status_t error, unsigned int nr_bytes) */
	u8 error = (u8)ctx->args[1];
	u32 nr_bytes = (u32)ctx->args[2];
	r->done += nr_bytes;
	if (r->done < r->bytes && !error)
		return 0; /* partial completion; the rest follows */

	s64 *n = inflight.lookup(&dev);
	if (n)
		__sync_fetch_and_add(n, -1);

	emit_io(r, bpf_ktime_get_ns(), error);
	reqs.delete(&rq);
	return 0;
}

/* ---- fsync-family syscalls -------------------------------------------------------------------- */

#ifdef IOFP_SYSCALLS
static __always_inline int sync_enter(u32 call, s32 fd)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id;
	struct iofp_sync_start s = {};
	s.enter_ns = bpf_ktime_get_ns();
	s.fd = fd;
	s.call = call;
	if (sync_calls.update(&tid, &s) != 0)
		count(IOFP_CNT_LOST_SYNC_MAP_FULL, 1);
	return 0;
}

static __always_inline int sync_exit(s64 ret)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id;
	struct iofp_sync_start *s = sync_calls.lookup(&tid);
	if (!s)
		return 0;
	char comm[IOFP_COMM_LEN] = {};
	bpf_get_current_comm(&comm, sizeof(comm));
	u32 pid = id >> 32;
	if (submitter_wanted(pid, comm)) {
		u32 zero = 0;
		u64 now = bpf_ktime_get_ns();
		u32 *bz = busy.lookup(&zero);
		struct iofp_sync_batch *b = sync_batch.lookup(&zero);
		struct iofp_sync_rec rec = {};
		rec.enter_ns = s->enter_ns;
		rec.exit_ns = now;
		rec.ret = ret;
		rec.pid = pid;
		rec.tid = tid;
		rec.fd = s->fd;
		rec.call = s->call;
		__builtin_memcpy(rec.comm, comm, sizeof(rec.comm));
		if (bz && b && !*(volatile u32 *)bz) {
			*(volatile u32 *)bz = 1;
			u32 i = b->hdr.count;
			if (i == 0)
				b->hdr.first_ns = now;
			b->recs[i & (IOFP_SYNC_BATCH - 1)] = rec;
			b->hdr.count = i + 1;
			if (i + 1 >= IOFP_SYNC_BATCH || now - b->hdr.first_ns >= IOFP_FLUSH_NS)
				send_sync(b);
			*(volatile u32 *)bz = 0;
		} else if (bz) {
			struct iofp_sync_single one = {};
			one.hdr.kind = IOFP_KIND_SYNC;
			one.hdr.count = 1;
			one.hdr.first_ns = now;
			one.rec = rec;
			if (events.ringbuf_output(&one, sizeof(one), IOFP_RB_FLAGS) == 0)
				count(IOFP_CNT_SYNC_RECORDS, 1);
			else
				count(IOFP_CNT_LOST_SYNC_RINGBUF, 1);
		}
	}
	sync_calls.delete(&tid);
	return 0;
}

/* call numbers: the index of the name in iofp.contract.SYNC_CALLS */
TRACEPOINT_PROBE(syscalls, sys_enter_fsync) { return sync_enter(0, args->fd); }
TRACEPOINT_PROBE(syscalls, sys_exit_fsync) { return sync_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_fdatasync) { return sync_enter(1, args->fd); }
TRACEPOINT_PROBE(syscalls, sys_exit_fdatasync) { return sync_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_sync_file_range) { return sync_enter(2, args->fd); }
TRACEPOINT_PROBE(syscalls, sys_exit_sync_file_range) { return sync_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_syncfs) { return sync_enter(3, args->fd); }
TRACEPOINT_PROBE(syscalls, sys_exit_syncfs) { return sync_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_sync) { return sync_enter(4, -1); }
TRACEPOINT_PROBE(syscalls, sys_exit_sync) { return sync_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_msync) { return sync_enter(5, -1); }
TRACEPOINT_PROBE(syscalls, sys_exit_msync) { return sync_exit(args->ret); }
#endif
