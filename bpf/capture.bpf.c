/* iofp capture: one record per completed block request, one per fsync-family syscall.
 *
 * Requests are keyed by their `struct request *` (raw tracepoints hand us the pointer): a merge, a
 * requeue or two requests on the same sector cannot be confused, and a pointer key is far cheaper to
 * hash than (dev, sector). The kernel headers bcc compiles against may be older than the running
 * kernel, so no struct layout from them is used: every field offset below is a -D define that the
 * loader (bpf/loader.py) computed from the running kernel's BTF.
 *
 * Defines from the loader:
 *   IOFP_OFF_RQ_Q, IOFP_OFF_RQ_CMD_FLAGS, IOFP_OFF_RQ_DATA_LEN, IOFP_OFF_RQ_SECTOR,
 *   IOFP_OFF_RQ_START_TIME, IOFP_OFF_RQ_RQ_FLAGS                                    struct request
 *   IOFP_RQF_FLUSH_SEQ                        rq_flags bit of a request in a blk-flush sequence, if in BTF
 *   IOFP_OFF_Q_DISK                                                                 struct request_queue
 *   IOFP_OFF_DISK_MAJOR, IOFP_OFF_DISK_FIRST_MINOR                                  struct gendisk
 *   IOFP_REQ_OP_MASK, IOFP_REQ_OP_FLUSH, IOFP_REQ_PREFLUSH                          enum req_op / req_flag_bits
 *   IOFP_IO_REC_SIZE, IOFP_SYNC_REC_SIZE     the numpy record sizes (layout check)
 *   IOFP_FLUSH_NS                             a batch older than this is sent on the next event
 *   IOFP_SLOT_BITS                            log2 of the direct-mapped in-flight request table
 *   IOFP_MAX_INFLIGHT                         entries in the hash map for requests whose slot is taken
 *   IOFP_RQ_SPAN_OFF, IOFP_RQ_SPAN_LEN        one read covering cmd_flags, __data_len, __sector
 *   IOFP_START_SPAN_OFF, IOFP_START_SPAN_LEN  one read covering q and cmd_flags
 *   IOFP_HAVE_IO_START                        block_io_start exists (else block_rq_insert stands in)
 *   IOFP_TYPED_RQ                             the programs that start and issue a request are loaded as
 *                                             BTF tracepoints (tp_btf): struct request's fields plain loads
 *   IOFP_FILTER_DEV                           only devices in the `devs` map
 *   IOFP_FILTER_PID=N, IOFP_FILTER_COMM + IOFP_COMM_W0/W1   submitter filters (two u64 words of comm)
 *   IOFP_SYSCALLS                             also trace the fsync-family syscalls and O_DSYNC writes
 *   IOFP_WRITE_CALLS                          the write family probed (O_DSYNC writes, or data calls)
 *   IOFP_DATA_CALLS                           and the data calls: O_DIRECT reads and writes (and libaio's
 *                                             with IOFP_AIO), the application's wait for its device
 *   IOFP_TEST_UNSEEN_EVERY=N                  tests only: ignore every Nth completion (as the kernel may)
 *   IOFP_CALL_DSYNC_WRITE                     index of "dsync_write" in iofp.contract.SYNC_CALLS
 *   IOFP_OFF_TASK_FILES, IOFP_OFF_FILES_FDT, IOFP_OFF_FDT_MAX_FDS, IOFP_OFF_FDT_FD,
 *   IOFP_OFF_FILE_INODE, IOFP_OFF_FILE_FLAGS, IOFP_OFF_INODE_MODE, IOFP_OFF_INODE_RDEV,
 *   IOFP_OFF_INODE_SB, IOFP_OFF_SB_BDEV, IOFP_OFF_BDEV_DEV    fd -> file -> device, for the syscalls
 */
#include <uapi/linux/ptrace.h>
#include "iofp_record.h"

#ifdef IOFP_SYSCALLS
/* sys_enter_pwritev2's format declares `rwf_t flags` (8 bytes, as every syscall argument there);
 * bcc builds the args struct from that text, and no header included here defines rwf_t. */
typedef __u64 rwf_t;
#ifdef IOFP_AIO
typedef unsigned long aio_context_t; /* io_submit's and io_getevents' formats, likewise */
#endif
#endif

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
	u32 seq; /* IOFP_SEQ_*: where it is in a blk-flush sequence */
};

/* A write with FUA or PREFLUSH on a device without them is run by blk-flush as a sequence
 * (pre-flush, data, post-flush): block_rq_complete fires when its data is done and again when the
 * whole sequence ends (with 0 bytes). The first is the request's completion; the second is expected,
 * counted and not mistaken for a request issued before the capture. */
#define IOFP_SEQ_NONE 0
#define IOFP_SEQ_IN 1    /* issued with RQF_FLUSH_SEQ */
#define IOFP_SEQ_FINAL 2 /* data completed and sent; the sequence's end is still to come */

/* Who asked for the flush that a flush-machinery request (rwbs FF, issued by a kworker) performs. */
struct iofp_flusher {
	u64 rq; /* the submitter's PREFLUSH request, which completes after the flush */
	u32 pid;
	u32 _pad;
	char comm[IOFP_COMM_LEN];
};

/* A syscall between its entry and its return: a commit (`call`), a data call (`data`), or both (an
 * O_DIRECT write on an O_DSYNC file). IOFP_NO_CALL: not one. */
#define IOFP_NO_CALL 0xffffffffU
struct iofp_sync_start {
	u64 enter_ns;
	u64 offset;
	s32 fd;
	u32 call;
	u32 data;
	u32 dev;
};

/* Requests in flight live in a direct-mapped table indexed by a hash of their pointer: an array
 * lookup is inlined by the verifier and takes no lock, where a hash-map insert + lookups + delete
 * per request cost ~4x more (measured: bench/capture_overhead.py). The kernel preallocates requests,
 * so a few hundred pointers go round; one that finds its slot taken by another request in flight
 * goes to the `reqs` hash map instead. A slot is claimed with a compare-and-swap of its owner. */
struct iofp_slot {
	u64 rq; /* owner; 0 = free */
	struct iofp_req r;
};
/* Mappable (BPF_F_MMAPABLE, 1 << 10; v5.5+): user space reads the table in place to find the requests
 * still in flight once a second (bpf/loader.py), where copying its 5 MiB out with a batch lookup took
 * ~18 ms of CPU a second, most of `iofp record`'s own cost. Lookups here are the same inlined access. */
#ifdef IOFP_SLOTS_MMAP
BPF_F_TABLE("array", int, struct iofp_slot, slots, 1 << IOFP_SLOT_BITS, 1U << 10);
#else
BPF_ARRAY(slots, struct iofp_slot, 1 << IOFP_SLOT_BITS);
#endif
BPF_HASH(reqs, u64, struct iofp_req, IOFP_MAX_INFLIGHT);
/* Entries in `reqs`: while 0 (no request in flight whose slot was taken, the usual case), a new
 * request's look-up of its pointer there is skipped: a miss in a table of IOFP_MAX_INFLIGHT buckets,
 * a quarter of block_io_start's run time here (perf, 20k IOPS, 2026-11-29). A request's insert
 * counts before its program returns, so its own later events, which come after, look. */
BPF_ARRAY(reqs_hashed, s64, 1);

/* In-flight count per device, the same way: a direct-mapped array, a hash map on collision. */
struct iofp_devcount {
	u64 dev; /* owner; 0 = free */
	s64 n;
};
#define IOFP_DEVCOUNT_BITS 8
BPF_ARRAY(devcount, struct iofp_devcount, 1 << IOFP_DEVCOUNT_BITS);
BPF_HASH(inflight, u32, s64, 1024);
BPF_HASH(flushers, u32, struct iofp_flusher, 1024);

/* Completions of requests issued before the capture started, with their time and device. A request
 * issued while one of them was still in flight had it in flight too, which the kernel's count (it
 * starts at 0) cannot know: user space adds them to `inflight` (bpf/record.py). Overflowing
 * entries are dropped and counted (early_overflow). */
struct iofp_early {
	u64 done_ns; /* 0: being written */
	u32 dev;
	u32 _pad;
};
BPF_ARRAY(early, struct iofp_early, IOFP_EARLY_N);
BPF_ARRAY(early_n, u64, 1); /* u64: a 32-bit fetch-and-add needs alu32, which bcc does not emit */
/* Set by user space just before it detaches block_rq_issue at the capture's stop (bpf/loader.py).
 * Issued after that, a request is not tracked, so its completion (block_rq_complete is detached
 * last) looks like one from before the start: counted apart instead (completed_after_stop), not
 * in `early`, where it would add one to the in-flight count of every row (+1147 on all rows with
 * a 50 ms stretch between the two detaches). */
BPF_ARRAY(issue_off, u32, 1);
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
/* Entries in sync_calls: while 0, a write's exit (every write(2) on the machine) returns at once
 * instead of looking its thread up. Only grows if a thread dies inside a sync; then exits look. */
BPF_ARRAY(sync_pending, s64, 1);
#ifdef IOFP_AIO
/* libaio: an iocb between the io_submit that hands it to the kernel and the io_getevents that
 * reaps it, keyed by its user-space address in its process (the io_event names it back). */
struct iofp_aio_key {
	u64 iocb;
	u32 tgid;
	u32 _pad;
};
struct iofp_aio {
	u64 submit_ns;
	u64 offset;
	s32 fd;
	u32 data;
	u32 dev;
	u32 _pad;
};
/* Tracked iocbs live in a direct-mapped table indexed by a hash of (iocb, process), as requests do
 * in `slots`: an array lookup is inlined and takes no lock, where the hash map's insert on io_submit
 * and lookup + delete on the reap (often on another CPU) were most of what libaio tracking cost. An
 * iocb whose slot is taken by another goes to the aio_iocbs hash map. A slot is claimed with a
 * compare-and-swap of `iocb`; its process is written last and cleared first, so a reaper that sees
 * both its iocb and its pid there sees an entry written whole (x86's stores are seen in order). */
struct iofp_aio_slot {
	u64 iocb; /* owner's iocb address; 0 = free */
	u32 tgid; /* owner's process; 0 while being written or freed */
	u32 _pad;
	struct iofp_aio v;
};
#ifndef IOFP_AIO_SLOT_BITS
#define IOFP_AIO_SLOT_BITS 12 /* 4096 slots of 48 bytes; fio at QD8 holds 8 */
#endif
BPF_ARRAY(aio_slots, struct iofp_aio_slot, 1 << IOFP_AIO_SLOT_BITS);
BPF_HASH(aio_iocbs, struct iofp_aio_key, struct iofp_aio, IOFP_AIO_MAX_INFLIGHT);
/* Entries in aio_slots and aio_iocbs: an io_getevents exit (any process's on the machine) with no
 * iocb tracked returns before a table is touched or a slot is read. It only grows if a process dies
 * with iocbs in flight; then exits look. */
BPF_ARRAY(aio_pending, s64, 1);
/* Entries in aio_iocbs alone: while 0 (no slot collision in flight), neither io_submit nor a reap
 * looks there. */
BPF_ARRAY(aio_hashed, s64, 1);
#ifndef IOFP_OFF_PT_REGS_ARG4
BPF_HASH(aio_reaps, u32, u64, 8192); /* thread in io_getevents -> the io_event array it fills */
BPF_ARRAY(aio_reaping, s64, 1);
#endif
#endif
#ifdef IOFP_FILTER_DEV
BPF_HASH(sync_devs, u32, u8, 1024); /* the captured disks, their partitions and holders (dm, md) */
/* The same devices direct-mapped by a hash of the number (bpf/loader.py fills both): a device in its
 * slot is captured, an empty slot says it is not, and only a slot another holds sends the look-up to
 * sync_devs. io_submit's entry, once per iocb, spent ~9% of its run in that hash look-up (perf). */
#define IOFP_DEVSET_BITS 8
BPF_ARRAY(sync_devset, u32, 1 << IOFP_DEVSET_BITS);
#endif
#endif

static __always_inline void count(u32 idx, u64 n)
{
	u64 *c = counters.lookup(&idx);
	if (c)
		*c += n; /* per-CPU: no atomics needed */
}

static __always_inline u32 queue_dev(u64 q)
{
	/* The same dev the block tracepoints print: q->disk, MKDEV(major, first_minor). */
	u64 disk = 0;
	u32 mm[2] = {}; /* gendisk major, first_minor: adjacent ints (checked by the loader) */

	if (!q)
		return 0;
	bpf_probe_read_kernel(&disk, sizeof(disk), (void *)(q + IOFP_OFF_Q_DISK));
	if (!disk)
		return 0;
	bpf_probe_read_kernel(mm, sizeof(mm), (void *)(disk + IOFP_OFF_DISK_MAJOR));
	return (mm[0] << 20) | mm[1];
}

static __always_inline bool dev_wanted(u32 dev)
{
#ifdef IOFP_FILTER_DEV
	return devs.lookup(&dev) != NULL;
#else
	return dev != 0;
#endif
}

/* Per-CPU cache of request_queue -> (dev, wanted): every new request would otherwise pay three
 * probe reads and a hash lookup (~150 ns here) to learn its device. Entries carry a check word so
 * that one torn by an interrupting program on this CPU is recomputed, never believed; iofp_flush
 * empties the cache every flush tick, so a queue freed and reallocated for another disk at the same
 * address cannot be misattributed for longer than that. */
struct iofp_qcache {
	u64 q;
	u64 v; /* dev << 32 | wanted << 31 | check */
};
#define IOFP_QCACHE_N 16
BPF_PERCPU_ARRAY(qcache, struct iofp_qcache, IOFP_QCACHE_N);

static __always_inline u32 qcache_check(u64 q, u64 dev_wanted)
{
	return (u32)(((q ^ (dev_wanted << 7)) * 0x9E3779B97F4A7C15ULL) >> 33);
}

/* The device of the queue `q` and whether it is traced (0 = not traced). */
static __always_inline u32 queue_dev_wanted(u64 q)
{
	u32 i = (u32)((q >> 6) & (IOFP_QCACHE_N - 1));
	struct iofp_qcache *c = qcache.lookup(&i);
	if (c && c->q == q && q) {
		u64 v = c->v;
		u64 dw = v >> 31;
		if ((u32)(v & 0x7fffffff) == qcache_check(q, dw))
			return (dw & 1) ? (u32)(dw >> 1) : 0;
	}
	u32 dev = queue_dev(q);
	u64 wanted = dev_wanted(dev) ? 1 : 0;
	if (c && q) {
		u64 dw = ((u64)dev << 1) | wanted;
		c->q = q;
		c->v = (dw << 31) | qcache_check(q, dw);
	}
	return wanted ? dev : 0;
}

/* The device of request `rq` if it is traced, else 0. */
static __always_inline u32 rq_dev_wanted(u64 rq)
{
	u64 q = 0;
	bpf_probe_read_kernel(&q, sizeof(q), (void *)(rq + IOFP_OFF_RQ_Q));
	return queue_dev_wanted(q);
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

/* The current task's pid (tgid) and comm, as plain loads through its BTF pointer, which the
 * verifier checks against the kernel's BTF: one helper call where bpf_get_current_pid_tgid() and
 * bpf_get_current_comm() are two, on every request. The kernel keeps comm NUL-padded. */
static __always_inline u32 current_who(char *comm)
{
	char *task = (char *)bpf_get_current_task_btf();
	u64 w0 = *(u64 *)(task + IOFP_OFF_TASK_COMM);
	u64 w1 = *(u64 *)(task + IOFP_OFF_TASK_COMM + 8);
	__builtin_memcpy(comm, &w0, 8);
	__builtin_memcpy(comm + 8, &w1, 8);
	return *(u32 *)(task + IOFP_OFF_TASK_TGID);
}

/* ---- request and device tables ------------------------------------------------------------- */

static __always_inline u32 slot_of(u64 rq)
{
	/* Fibonacci hashing of the pointer without its cache-line bits (requests are line-aligned) */
	return (u32)(((rq >> 6) * 0x9E3779B97F4A7C15ULL) >> (64 - IOFP_SLOT_BITS));
}

/* The tracked request `rq`, or NULL; *slot is its slot when it has one (NULL: in the hash map). */
static __always_inline struct iofp_req *req_find(u64 rq, struct iofp_slot **slot)
{
	u32 i = slot_of(rq);
	struct iofp_slot *s = slots.lookup(&i);
	*slot = NULL;
	if (s && s->rq == rq) {
		*slot = s;
		return &s->r;
	}
	u32 zero = 0;
	s64 *hashed = reqs_hashed.lookup(&zero);
	if (hashed && *(volatile s64 *)hashed <= 0)
		return NULL;
	return reqs.lookup(&rq);
}

/* Start tracking `rq` (not tracked yet) as `init`; NULL when the hash map is full too. */
static __always_inline struct iofp_req *req_new(u64 rq, struct iofp_req *init, struct iofp_slot **slot)
{
	u32 i = slot_of(rq);
	struct iofp_slot *s = slots.lookup(&i);
	*slot = NULL;
	if (s && s->rq == 0 && __sync_val_compare_and_swap(&s->rq, 0, rq) == 0) {
		/* Only this request's own later events read the slot, and they happen after this one */
		__builtin_memcpy(&s->r, init, sizeof(s->r));
		*slot = s;
		return &s->r;
	}
	u32 zero = 0;
	s64 *hashed = reqs_hashed.lookup(&zero);
	if (!hashed)
		return NULL;
	if (reqs.insert(&rq, init) == 0)
		__sync_fetch_and_add(hashed, 1);
	else if (reqs.update(&rq, init) != 0) /* there already (replaced, counted once) or full */
		return NULL;
	return reqs.lookup(&rq);
}

static __always_inline void req_forget(u64 rq, struct iofp_slot *slot)
{
	if (slot) {
		__sync_lock_test_and_set(&slot->rq, 0); /* a full barrier: our reads of it are done */
	} else if (reqs.delete(&rq) == 0) {
		u32 zero = 0;
		s64 *hashed = reqs_hashed.lookup(&zero);
		if (hashed)
			__sync_fetch_and_add(hashed, -1);
	}
}

static __always_inline s64 *inflight_of(u32 dev)
{
	u32 i = (dev * 2654435761U) >> (32 - IOFP_DEVCOUNT_BITS);
	struct iofp_devcount *c = devcount.lookup(&i);
	if (c) {
		if (c->dev == dev)
			return &c->n;
		if (c->dev == 0 && __sync_val_compare_and_swap(&c->dev, 0, (u64)dev) == 0)
			return &c->n;
		if (c->dev == dev) /* another CPU claimed it for the same device just now */
			return &c->n;
	}
	s64 *n = inflight.lookup(&dev);
	if (!n) {
		s64 zero = 0;
		inflight.update(&dev, &zero); /* BPF_ANY; a racing insert of 0 is harmless */
		n = inflight.lookup(&dev);
	}
	return n;
}

/* Add `delta` to dev's in-flight count; the count after it (0 if there is no counter). */
static __always_inline s64 inflight_add(u32 dev, s64 delta)
{
	s64 *n = inflight_of(dev);
	return n ? __sync_fetch_and_add(n, delta) + delta : 0;
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

/* The same shape as send_io on purpose: one helper taking the sizes as arguments let clang fold the
 * size clamp into the count clamp, and the verifier then refused ringbuf_output ("R3 unbounded"). */
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
#pragma unroll
	for (u32 i = 0; i < IOFP_QCACHE_N; i++) {
		u32 k = i;
		struct iofp_qcache *c = qcache.lookup(&k);
		if (c)
			c->q = 0;
	}
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
 * interrupted someone appending to it. `complete_ns` with IOFP_UNSEEN set: its completion never
 * reached us, and the rest of it is when that was found out. */
static __always_inline void emit_io(struct iofp_req *r, u64 complete_ns, u8 error)
{
	if (!submitter_wanted(r->pid, r->comm))
		return;
	u32 zero = 0;
	u64 now = complete_ns & ~IOFP_UNSEEN;
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

/* An issued request whose completion never ran our program: on the lab VM, every completion the
 * block layer runs in a softirq on top of the VM agent's threads, whose context the kernel hides
 * from BPF (1 in ~4,000-90,000 at full rate, bpf/witness.py). It did complete (the block layer only
 * hands a request out again, or re-issues a flush, after that): sent now, marked unseen with the
 * time this was found out, so that user space can take its completion time from the tracefs
 * witness; taken out of the in-flight count; counted. */
static __always_inline void send_lost(struct iofp_req *r)
{
	inflight_add(r->dev, -1);
	emit_io(r, bpf_ktime_get_ns() | IOFP_UNSEEN, 0);
	count(IOFP_CNT_UNSEEN_COMPLETIONS, 1);
}

static __always_inline void early_done(u32 dev)
{
	count(IOFP_CNT_UNMATCHED_COMPLETIONS, 1);
	u32 zero = 0;
	u64 *n = early_n.lookup(&zero);
	if (!n)
		return;
	u32 i = (u32)__sync_fetch_and_add(n, 1);
	struct iofp_early *e = early.lookup(&i);
	if (!e) {
		count(IOFP_CNT_EARLY_OVERFLOW, 1);
		return;
	}
	e->dev = dev;
	e->done_ns = bpf_ktime_get_ns();
}

/* ---- block requests --------------------------------------------------------------------------- */
/* Raw tracepoint programs, attached by the loader (bpf/loader.py) by name, so that the capture
 * starts at a known instant rather than when bcc finishes compiling. */

/* struct request's q and cmd_flags: plain loads under IOFP_TYPED_RQ, else one probe read where they
 * are close (0 and 24 on 6.1-6.18) */
struct iofp_rq_head {
	u64 q;
	u32 cmd_flags;
};

#ifdef IOFP_TYPED_RQ
/* In a BTF tracepoint the request is a typed pointer, whose fields are plain loads that the verifier
 * checks against the kernel's BTF, where a probe read (a helper call) cost ~35 ns a request here
 * (bpf stats, 2026-11-29). The verifier forbids arithmetic on a typed pointer, though, and the tables
 * are keyed and hashed by the pointer's value: that is taken as a number through this CPU's scratch
 * words (a privileged program may store a pointer in a map; what it loads from one is a number).
 * The other typed program may interrupt this one on its CPU (a completion's softirq dispatching the
 * queue issues a request in the middle of block_io_start's program): each nesting level has its own
 * word, claimed by the depth, which an interrupting program restores before it returns. */
#define IOFP_NUMBER_DEPTH 4 /* process, softirq, hardirq: nested no deeper */
struct iofp_numbers {
	u64 depth;
	u64 word[IOFP_NUMBER_DEPTH];
};
BPF_PERCPU_ARRAY(rq_number, struct iofp_numbers, 1);

static __always_inline u64 as_number(u64 p)
{
	u32 zero = 0;
	struct iofp_numbers *n = rq_number.lookup(&zero);
	if (!n)
		return 0;
	u64 d = *(volatile u64 *)&n->depth;
	*(volatile u64 *)&n->depth = d + 1; /* from here, a program interrupting this one uses the next word */
	volatile u64 *w = &n->word[d & (IOFP_NUMBER_DEPTH - 1)];
	*w = p;
	u64 v = *w;
	*(volatile u64 *)&n->depth = d;
	return v;
}

#define RQ_NUM(p) as_number(p)
#define RQ_FIELD(p, off, type) (*(type *)((p) + (off)))

static __always_inline void rq_head(u64 p, struct iofp_rq_head *h)
{
	h->q = as_number(RQ_FIELD(p, IOFP_OFF_RQ_Q, u64));
	h->cmd_flags = RQ_FIELD(p, IOFP_OFF_RQ_CMD_FLAGS, u32);
}
#else
#define RQ_NUM(p) (p) /* a raw tracepoint's arguments are numbers already */

static __always_inline void rq_head(u64 rq, struct iofp_rq_head *h)
{
#ifdef IOFP_START_SPAN_LEN
	u8 span[IOFP_START_SPAN_LEN];
	bpf_probe_read_kernel(span, sizeof(span), (void *)(rq + IOFP_START_SPAN_OFF));
	__builtin_memcpy(&h->q, span + (IOFP_OFF_RQ_Q - IOFP_START_SPAN_OFF), 8);
	__builtin_memcpy(&h->cmd_flags, span + (IOFP_OFF_RQ_CMD_FLAGS - IOFP_START_SPAN_OFF), 4);
#else
	bpf_probe_read_kernel(&h->q, 8, (void *)(rq + IOFP_OFF_RQ_Q));
	bpf_probe_read_kernel(&h->cmd_flags, 4, (void *)(rq + IOFP_OFF_RQ_CMD_FLAGS));
#endif
}
#endif

/* `p`: the program's request argument (RQ_NUM gives its value) */
static __always_inline int track_start(u64 p)
{
	struct iofp_rq_head h = {};
	rq_head(p, &h);
	u32 dev = queue_dev_wanted(h.q);
	if (!dev)
		return 0;
	u64 rq = RQ_NUM(p);
	/* No clock read here (~60-75 ns per bpf_ktime_get_ns() on this VM): queue_ns is the request's own
	 * start_time_ns, read at issue (see rq_fields) */
	struct iofp_req r = {};
	r.dev = dev;
	r.pid = current_who(r.comm);
	struct iofp_slot *slot;
	struct iofp_req *old = req_find(rq, &slot);
	if (old) {
		/* The pointer is still tracked: a request that used it before was issued, but its
		 * block_rq_complete never ran our program (see send_lost). Send it now, so that it is
		 * neither dropped silently nor left counted in flight. */
		if (old->issue_ns) {
			send_lost(old);
		} else if (old->seq == IOFP_SEQ_FINAL) {
			count(IOFP_CNT_FLUSH_SEQ_FINAL, 1); /* its flush sequence ended unseen */
		} else {
			/* never issued, yet done with: an empty PREFLUSH request whose completion (by
			 * blk-flush) did not reach us; counted like the ones that did */
			count(IOFP_CNT_COMPLETED_UNISSUED, 1);
		}
		__builtin_memcpy(old, &r, sizeof(r));
	} else if (!req_new(rq, &r, &slot)) {
		count(IOFP_CNT_LOST_IO_MAP_FULL, 1);
		return 0;
	}
	/* An fsync on a device with a volatile cache arrives as a PREFLUSH request from the
	 * application, but the flush itself is a separate request (rwbs FF) that blk-flush issues
	 * from a kworker: remember who asked, per device, until that flush is issued. */
	if (h.cmd_flags & IOFP_REQ_PREFLUSH) {
		struct iofp_flusher f = {};
		f.rq = rq;
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
	u64 p = ctx->args[0];
	struct iofp_slot *slot;
	if (req_find(RQ_NUM(p), &slot))
		return 0;
	return track_start(p);
}
#endif

/* struct request's cmd_flags, __data_len, __sector and start_time_ns: plain loads under IOFP_TYPED_RQ;
 * else one probe read when they lie within IOFP_RQ_SPAN_LEN bytes of each other (24..112 on 6.1-6.18),
 * else four. */
struct iofp_rq_fields {
	u32 rq_flags;
	u32 cmd_flags;
	u32 bytes;
	u64 sector;
	u64 start_ns; /* rq->start_time_ns: when blk-mq allocated it (0 if the queue keeps no stats) */
};

static __always_inline void rq_fields(u64 rq, struct iofp_rq_fields *f)
{
#if defined(IOFP_TYPED_RQ)
	f->cmd_flags = RQ_FIELD(rq, IOFP_OFF_RQ_CMD_FLAGS, u32);
	f->rq_flags = RQ_FIELD(rq, IOFP_OFF_RQ_RQ_FLAGS, u32);
	f->bytes = RQ_FIELD(rq, IOFP_OFF_RQ_DATA_LEN, u32);
	f->sector = RQ_FIELD(rq, IOFP_OFF_RQ_SECTOR, u64);
	f->start_ns = RQ_FIELD(rq, IOFP_OFF_RQ_START_TIME, u64);
#elif defined(IOFP_RQ_SPAN_LEN)
	u8 span[IOFP_RQ_SPAN_LEN];
	bpf_probe_read_kernel(span, sizeof(span), (void *)(rq + IOFP_RQ_SPAN_OFF));
	__builtin_memcpy(&f->cmd_flags, span + (IOFP_OFF_RQ_CMD_FLAGS - IOFP_RQ_SPAN_OFF), 4);
	__builtin_memcpy(&f->rq_flags, span + (IOFP_OFF_RQ_RQ_FLAGS - IOFP_RQ_SPAN_OFF), 4);
	__builtin_memcpy(&f->bytes, span + (IOFP_OFF_RQ_DATA_LEN - IOFP_RQ_SPAN_OFF), 4);
	__builtin_memcpy(&f->sector, span + (IOFP_OFF_RQ_SECTOR - IOFP_RQ_SPAN_OFF), 8);
	__builtin_memcpy(&f->start_ns, span + (IOFP_OFF_RQ_START_TIME - IOFP_RQ_SPAN_OFF), 8);
#else
	bpf_probe_read_kernel(&f->cmd_flags, 4, (void *)(rq + IOFP_OFF_RQ_CMD_FLAGS));
	bpf_probe_read_kernel(&f->rq_flags, 4, (void *)(rq + IOFP_OFF_RQ_RQ_FLAGS));
	bpf_probe_read_kernel(&f->bytes, 4, (void *)(rq + IOFP_OFF_RQ_DATA_LEN));
	bpf_probe_read_kernel(&f->sector, 8, (void *)(rq + IOFP_OFF_RQ_SECTOR));
	bpf_probe_read_kernel(&f->start_ns, 8, (void *)(rq + IOFP_OFF_RQ_START_TIME));
#endif
}

int iofp_rq_issue(struct bpf_raw_tracepoint_args *ctx)
{
	u64 p = ctx->args[0];
	u64 now = bpf_ktime_get_ns();
	struct iofp_rq_fields f;
	rq_fields(p, &f);
	u64 rq = RQ_NUM(p);

	struct iofp_slot *slot;
	struct iofp_req *r = req_find(rq, &slot);
	if (r && r->seq == IOFP_SEQ_FINAL) {
		/* issued again: the end of its flush sequence never reached us; it is a new request */
		count(IOFP_CNT_FLUSH_SEQ_FINAL, 1);
		req_forget(rq, slot);
		r = NULL;
	} else if (r && r->issue_ns && (f.cmd_flags & IOFP_REQ_OP_MASK) == IOFP_REQ_OP_FLUSH) {
		/* blk-flush issues its flush request again only once it has completed: that completion
		 * never ran our program (see send_lost). Send it and start over. */
		send_lost(r);
		req_forget(rq, slot);
		r = NULL;
	}
	if (!r) {
		/* Started before the capture, or a request the block layer made itself (a flush). */
		u32 dev = rq_dev_wanted(rq);
		if (!dev)
			return 0;
		struct iofp_req fresh = {};
		fresh.dev = dev;
		if ((f.cmd_flags & IOFP_REQ_OP_MASK) == IOFP_REQ_OP_FLUSH) {
			struct iofp_flusher *fl = flushers.lookup(&dev);
			if (fl) {
				fresh.pid = fl->pid;
				__builtin_memcpy(fresh.comm, fl->comm, sizeof(fresh.comm));
				flushers.delete(&dev);
			}
		}
		r = req_new(rq, &fresh, &slot);
		if (!r) {
			count(IOFP_CNT_LOST_IO_MAP_FULL, 1);
			return 0;
		}
	}
	if (r->issue_ns) {
		/* Re-issued without a requeue event: it is still counted once in flight. */
		r->issue_ns = now;
		return 0;
	}
	r->issue_ns = now;
	/* blk-mq stamps a request when it allocates it, with the same clock (CLOCK_MONOTONIC) if the
	 * queue keeps I/O stats (the default; cached per plug, as for iostat). Read here, at issue:
	 * read at block_io_start it was stale on 6.18 (the asker's PREFLUSH stamp gave flush rows
	 * queue times up to 5.6 s before the capture). A flush (rwbs FF) never entered the block
	 * layer as a bio (blk-flush made it): it has no queue time, left 0, the row says unknown. */
	if ((f.cmd_flags & IOFP_REQ_OP_MASK) != IOFP_REQ_OP_FLUSH)
		r->queue_ns = f.start_ns;
	r->cmd_flags = f.cmd_flags;
#ifdef IOFP_RQF_FLUSH_SEQ
	/* blk-flush's own flush request carries the flag too but completes once */
	if ((f.rq_flags & IOFP_RQF_FLUSH_SEQ) && (f.cmd_flags & IOFP_REQ_OP_MASK) != IOFP_REQ_OP_FLUSH)
		r->seq = IOFP_SEQ_IN;
#endif
	r->bytes = f.bytes;
	r->sector = f.sector;
	r->inflight = inflight_add(r->dev, 1);
	return 0;
}

int iofp_rq_requeue(struct bpf_raw_tracepoint_args *ctx)
{
	/* Back to the queue: it will be issued again, and counted in flight again then. */
	u64 rq = ctx->args[0];
	struct iofp_slot *slot;
	struct iofp_req *r = req_find(rq, &slot);
	if (!r || !r->issue_ns)
		return 0;
	inflight_add(r->dev, -1);
	r->issue_ns = 0;
	r->inflight = 0;
	return 0;
}

int iofp_rq_merge(struct bpf_raw_tracepoint_args *ctx)
{
	/* Merged into another request before issue: it will never complete on its own. */
	u64 rq = ctx->args[0];
	struct iofp_slot *slot;
	if (req_find(rq, &slot))
		req_forget(rq, slot);
	return 0;
}

int iofp_rq_complete(struct bpf_raw_tracepoint_args *ctx)
{
	u64 rq = ctx->args[0];
	struct iofp_slot *slot;
	struct iofp_req *r = req_find(rq, &slot);
	if (!r) {
		/* Issued before the capture started (the only other ways: a device we do not trace, or,
		 * once the stop has begun, issued after block_rq_issue was detached). */
		u32 dev = rq_dev_wanted(rq);
		if (!dev)
			return 0;
		u32 zero = 0;
		u32 *off = issue_off.lookup(&zero);
		if (off && *(volatile u32 *)off)
			count(IOFP_CNT_COMPLETED_AFTER_STOP, 1);
		else
			early_done(dev);
		return 0;
	}
	if (r->seq == IOFP_SEQ_FINAL) {
		count(IOFP_CNT_FLUSH_SEQ_FINAL, 1);
		req_forget(rq, slot);
		return 0;
	}
#ifdef IOFP_TEST_UNSEEN_EVERY
	/* Fault injection for the tests: act as if every Nth completion never reached us */
	if (r->issue_ns && r->seq == IOFP_SEQ_NONE) {
		u32 k = IOFP_CNT_COMPLETIONS;
		u64 *c = counters.lookup(&k);
		if (c && *c % IOFP_TEST_UNSEEN_EVERY == IOFP_TEST_UNSEEN_EVERY - 1) {
			*c += 1;
			return 0;
		}
	}
#endif
	count(IOFP_CNT_COMPLETIONS, 1);
	u32 dev = r->dev;
	if (!r->issue_ns) {
		/* e.g. an empty PREFLUSH request: blk-flush completes it once its flush is done. */
		struct iofp_flusher *fl = flushers.lookup(&dev);
		if (fl && fl->rq == rq)
			flushers.delete(&dev);
		count(IOFP_CNT_COMPLETED_UNISSUED, 1);
		req_forget(rq, slot);
		return 0;
	}
	/* block_rq_complete(rq, blk_status_t error, unsigned int nr_bytes) */
	u8 error = (u8)ctx->args[1];
	u32 nr_bytes = (u32)ctx->args[2];
	r->done += nr_bytes;
	if (r->done < r->bytes && !error)
		return 0; /* partial completion; the rest follows */

	inflight_add(dev, -1);
	emit_io(r, bpf_ktime_get_ns(), error);
	if (r->seq == IOFP_SEQ_IN) {
		/* keep it (not issued, not in flight) until the sequence's own completion */
		r->seq = IOFP_SEQ_FINAL;
		r->issue_ns = 0;
		return 0;
	}
	req_forget(rq, slot);
	return 0;
}

/* ---- fsync-family syscalls -------------------------------------------------------------------- */

#ifdef IOFP_SYSCALLS
/* The open file behind `fd` in the current task (0 if none): current->files->fdt->fd[fd].
 * Every write(2) on the machine passes here. Through the task's BTF pointer the first three steps
 * are plain loads the verifier checks against the kernel's BTF (a probe read is a helper call,
 * ~40 ns on this VM: 1390 -> 1245 ns per traced pwrite measured); fdt->fd is a pointer to pointers,
 * which the verifier does not type, so the last step is a probe read. */
static __always_inline u64 fd_file(s32 fd)
{
	char *task = (char *)bpf_get_current_task_btf();
	u64 file = 0;

	if (fd < 0)
		return 0;
	char *files = *(char **)(task + IOFP_OFF_TASK_FILES);
	if (!files)
		return 0;
	char *fdt = *(char **)(files + IOFP_OFF_FILES_FDT);
	if (!fdt)
		return 0;
	if ((u32)fd >= *(u32 *)(fdt + IOFP_OFF_FDT_MAX_FDS))
		return 0;
	u64 arr = *(u64 *)(fdt + IOFP_OFF_FDT_FD);
	if (!arr)
		return 0;
	bpf_probe_read_kernel(&file, sizeof(file), (void *)(arr + (u64)(u32)fd * 8));
	return file;
}

#ifdef IOFP_OFF_OVL_UPPER
#define IOFP_OVERLAYFS_MAGIC 0x794c7630 /* include/uapi/linux/magic.h */

/* An overlayfs file (a container's writable layer) syncs through to its upper layer's filesystem:
 * the overlay inode is embedded in struct ovl_inode, whose upper dentry leads to that superblock.
 * Before copy-up there is no upper dentry, and a sync of a lower-only file writes nothing. */
static __always_inline u64 overlay_upper_sb(u64 inode, u64 sb)
{
	u64 magic = 0, upper = 0, real = 0, real_sb = 0;

	bpf_probe_read_kernel(&magic, sizeof(magic), (void *)(sb + IOFP_OFF_SB_MAGIC));
	if (magic != IOFP_OVERLAYFS_MAGIC)
		return 0;
	bpf_probe_read_kernel(&upper, sizeof(upper), (void *)(inode - IOFP_OFF_OVL_VFS_INODE + IOFP_OFF_OVL_UPPER));
	if (!upper)
		return 0;
	bpf_probe_read_kernel(&real, sizeof(real), (void *)(upper + IOFP_OFF_DENTRY_INODE));
	if (!real)
		return 0;
	bpf_probe_read_kernel(&real_sb, sizeof(real_sb), (void *)(real + IOFP_OFF_INODE_SB));
	return real_sb;
}
#endif

/* The device of an overlayfs file's upper layer (a container's writable layer), for a file whose
 * superblock has no block device; 0 when it is not overlayfs or the layer has none. */
static __always_inline u32 upper_dev(u64 inode, u64 sb)
{
#ifdef IOFP_OFF_OVL_UPPER
	u64 bdev = 0;
	u32 dev = 0;

	sb = overlay_upper_sb(inode, sb);
	if (!sb)
		return 0;
	bpf_probe_read_kernel(&bdev, sizeof(bdev), (void *)(sb + IOFP_OFF_SB_BDEV));
	if (!bdev)
		return 0;
	bpf_probe_read_kernel(&dev, sizeof(dev), (void *)(bdev + IOFP_OFF_BDEV_DEV));
	return dev;
#else
	return 0;
#endif
}

/* The block device (kernel dev_t) a file's data is on: its own number for a block device node,
 * else its filesystem's device (s_bdev, so that btrfs' anonymous s_dev does not hide it), through
 * the upper layer for overlayfs; 0 when the filesystem has no block device (tmpfs, NFS, FUSE). */
static __always_inline u32 file_dev(u64 file)
{
	u64 inode = 0, sb = 0, bdev = 0;
	u16 mode = 0;
	u32 dev = 0;

	if (!file)
		return 0;
	bpf_probe_read_kernel(&inode, sizeof(inode), (void *)(file + IOFP_OFF_FILE_INODE));
	if (!inode)
		return 0;
	bpf_probe_read_kernel(&mode, sizeof(mode), (void *)(inode + IOFP_OFF_INODE_MODE));
	if ((mode & 0170000) == 0060000) { /* S_IFBLK */
		bpf_probe_read_kernel(&dev, sizeof(dev), (void *)(inode + IOFP_OFF_INODE_RDEV));
		return dev;
	}
	bpf_probe_read_kernel(&sb, sizeof(sb), (void *)(inode + IOFP_OFF_INODE_SB));
	if (!sb)
		return 0;
	bpf_probe_read_kernel(&bdev, sizeof(bdev), (void *)(sb + IOFP_OFF_SB_BDEV));
	if (!bdev)
		return upper_dev(inode, sb);
	bpf_probe_read_kernel(&dev, sizeof(dev), (void *)(bdev + IOFP_OFF_BDEV_DEV));
	return dev;
}

/* Whether a file's device is a captured one: with --device, the disks, their partitions and the
 * devices stacked on them; without, any. */
static __always_inline bool dev_captured(u32 dev)
{
#ifdef IOFP_FILTER_DEV
	if (!dev)
		return false;
	u32 i = (dev * 2654435761U) >> (32 - IOFP_DEVSET_BITS);
	u32 *held = sync_devset.lookup(&i);
	if (held && (*held == dev || *held == 0))
		return *held == dev;
	return sync_devs.lookup(&dev) != NULL;
#else
	return true;
#endif
}

#ifdef IOFP_OFF_FILES_FD_ARRAY
/* The open file behind `fd` as a BTF pointer, so that the file's flags and the walk to its device are
 * plain loads the verifier checks against the kernel's BTF, where fd_file's untyped result needs a
 * probe read (a helper call, ~40 ns on this VM) for each: write(2)'s entry, on every write on the
 * machine, reads the file and its flags; io_submit's the file and three or five fields to its device.
 * The kernel types a pointer loaded from files_struct's own fd_array (the table of a process that
 * never had more than 64 fds open: fdt->fd points there), not one from fdt->fd, a pointer to
 * pointers; and the verifier takes no variable offset on a BTF pointer, so each fd below 64 is a case
 * of its own, each load in asm so that clang cannot merge the cases into one load at files + 8 * fd.
 * *typed false: not in the embedded table (fd >= 64, or a table grown past it): use fd_file(). */
#define IOFP_FD_CASE(k)                                                                                   \
	case k:                                                                                           \
		asm volatile("%0 = *(u64 *)(%1 + %2)" : "=r"(f) : "r"(files), "i"(IOFP_OFF_FILES_FD_ARRAY + 8 * (k))); \
		break;
#define IOFP_FD_CASES8(k)                                                                                 \
	IOFP_FD_CASE(k) IOFP_FD_CASE(k + 1) IOFP_FD_CASE(k + 2) IOFP_FD_CASE(k + 3) IOFP_FD_CASE(k + 4)  \
	IOFP_FD_CASE(k + 5) IOFP_FD_CASE(k + 6) IOFP_FD_CASE(k + 7)
_Static_assert(IOFP_FD_ARRAY_N == 64, "files_struct.fd_array: the cases below are fds 0-63");
static __always_inline char *fd_file_typed(s32 fd, bool *typed)
{
	char *task = (char *)bpf_get_current_task_btf();
	char *f = 0;

	*typed = false;
	if (fd < 0 || fd >= IOFP_FD_ARRAY_N)
		return 0;
	char *files = *(char **)(task + IOFP_OFF_TASK_FILES);
	if (!files)
		return 0;
	char *fdt = *(char **)(files + IOFP_OFF_FILES_FDT);
	if (!fdt)
		return 0;
	if (*(u64 *)(fdt + IOFP_OFF_FDT_FD) != (u64)(files + IOFP_OFF_FILES_FD_ARRAY))
		return 0;
	*typed = true;
	switch (fd) {
		IOFP_FD_CASES8(0)
		IOFP_FD_CASES8(8)
		IOFP_FD_CASES8(16)
		IOFP_FD_CASES8(24)
		IOFP_FD_CASES8(32)
		IOFP_FD_CASES8(40)
		IOFP_FD_CASES8(48)
		IOFP_FD_CASES8(56)
	}
	return f;
}

/* file_dev() through a BTF pointer: the same walk, plain loads (an overlayfs file's upper layer is
 * still followed with probe reads: ovl_inode lies before the inode, where the verifier reads nothing). */
static __always_inline u32 file_dev_typed(char *file)
{
	char *inode = *(char **)(file + IOFP_OFF_FILE_INODE);
	if (!inode)
		return 0;
	if ((*(u16 *)(inode + IOFP_OFF_INODE_MODE) & 0170000) == 0060000) /* S_IFBLK */
		return *(u32 *)(inode + IOFP_OFF_INODE_RDEV);
	char *sb = *(char **)(inode + IOFP_OFF_INODE_SB);
	if (!sb)
		return 0;
	char *bdev = *(char **)(sb + IOFP_OFF_SB_BDEV);
	if (bdev)
		return *(u32 *)(bdev + IOFP_OFF_BDEV_DEV);
	return upper_dev((u64)inode, (u64)sb);
}
#endif

/* The device (kernel dev_t) of the file behind `fd`, 0 if none or on no block device; *open: whether
 * `fd` is an open file. Through probe reads only: */
static __always_inline u32 fd_dev_probed(s32 fd, bool *open)
{
	u64 file = fd_file(fd);
	*open = file != 0;
	return file ? file_dev(file) : 0;
}

/* The same, through a BTF pointer where the fd is in the embedded table */
static __always_inline u32 fd_dev(s32 fd, bool *open)
{
#ifdef IOFP_OFF_FILES_FD_ARRAY
	bool typed;
	char *tf = fd_file_typed(fd, &typed);
	if (typed) {
		*open = tf != 0;
		return tf ? file_dev_typed(tf) : 0;
	}
#endif
	return fd_dev_probed(fd, open);
}

static __always_inline int sync_start(u32 call, u32 data, s32 fd, u32 dev, u64 offset)
{
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id;
	struct iofp_sync_start s = {};
	s.enter_ns = bpf_ktime_get_ns();
	s.offset = offset;
	s.fd = fd;
	s.call = call;
	s.data = data;
	s.dev = dev;
	if (sync_calls.update(&tid, &s) != 0) {
		count(IOFP_CNT_LOST_SYNC_MAP_FULL, 1);
		return 0;
	}
	u32 zero = 0;
	s64 *pending = sync_pending.lookup(&zero);
	if (pending)
		__sync_fetch_and_add(pending, 1);
	return 0;
}

/* With --device, only syncs of files on the captured devices count: an fsync elsewhere on the
 * machine says nothing about this device's commits. sync(2) and msync(2) name no file (msync's
 * mapping would need bpf_find_vma, whose callback bcc 0.26 cannot load), so with --device they are
 * kept only when --pid or --comm says whose they are: otherwise every msync on the machine (a
 * JVM's, a database's on tmpfs) read as a commit of this device. Counted, never silent. */
static __always_inline int sync_enter(u32 call, s32 fd)
{
#if defined(IOFP_FILTER_DEV) && !defined(IOFP_FILTER_PID) && !defined(IOFP_FILTER_COMM)
	if (fd < 0) {
		count(IOFP_CNT_SYNC_NO_DEVICE, 1);
		return 0;
	}
#endif
	bool open = false;
	u32 dev = fd >= 0 ? fd_dev(fd, &open) : 0;
	if (fd >= 0 && !dev_captured(dev)) {
		count(IOFP_CNT_SYNC_OTHER_DEVICE, 1);
		return 0;
	}
	return sync_start(call, IOFP_NO_CALL, fd, dev, IOFP_NO_OFFSET);
}

/* A write on a file opened O_DSYNC/O_SYNC (or pwritev2 with RWF_DSYNC/RWF_SYNC) is a commit too:
 * the call returns once the data is durable (PostgreSQL's open_datasync, O_DSYNC logs). A read or
 * write on a file opened O_DIRECT is a data call: it returns when its block I/O completes, so its
 * time is the application's wait for the device and for anything holding its bios above the block
 * layer (blk-throttle, before every block tracepoint). Buffered calls are left out: most never
 * reach the device. Every read(2) and write(2) on the machine passes here, so the test is a few
 * reads and no map operation. */
#define IOFP_O_DSYNC 010000  /* uapi asm-generic/fcntl.h; O_SYNC includes this bit */
#define IOFP_O_DIRECT 040000 /* x86 and most architectures (asm-generic/fcntl.h) */
#define IOFP_RWF_DSYNC 0x2
#define IOFP_RWF_SYNC 0x4
static __always_inline int data_enter(s32 fd, u32 data, u64 offset, u64 rwf, bool write)
{
	u32 fflags = 0;
	u32 dev = 0;
#ifdef IOFP_DATA_CALLS
	u32 direct_bit = IOFP_O_DIRECT;
#else
	u32 direct_bit = 0; /* commits only: a write is looked at for O_DSYNC, a read never probed */
#endif
	u32 wanted = direct_bit | (write ? IOFP_O_DSYNC : 0);
	bool rwf_sync = write && (rwf & (IOFP_RWF_DSYNC | IOFP_RWF_SYNC)); /* a commit whatever the file's flags */
#ifdef IOFP_OFF_FILES_FD_ARRAY
	bool typed;
	char *tf = fd_file_typed(fd, &typed);
	if (typed) {
		if (!tf)
			return 0;
		fflags = *(u32 *)(tf + IOFP_OFF_FILE_FLAGS);
		if (!rwf_sync && !(fflags & wanted))
			return 0;
		dev = file_dev_typed(tf);
	} else
#endif
	{
		u64 file = fd_file(fd);
		if (!file)
			return 0;
		bpf_probe_read_kernel(&fflags, sizeof(fflags), (void *)(file + IOFP_OFF_FILE_FLAGS));
		if (!rwf_sync && !(fflags & wanted))
			return 0;
		dev = file_dev(file);
	}
	bool dsync = rwf_sync || (write && (fflags & IOFP_O_DSYNC));
	bool direct = fflags & direct_bit;
	if (!dev_captured(dev)) {
		if (dsync)
			count(IOFP_CNT_SYNC_OTHER_DEVICE, 1);
		return 0;
	}
	return sync_start(dsync ? IOFP_CALL_DSYNC_WRITE : IOFP_NO_CALL, direct ? data : IOFP_NO_CALL, fd, dev,
			  offset);
}

/* Append one syscall record to this CPU's batch (or send it alone: see emit_io). */
static __always_inline void emit_sync(struct iofp_sync_rec *rec, u64 now)
{
	u32 zero = 0;
	u32 *bz = busy.lookup(&zero);
	struct iofp_sync_batch *b = sync_batch.lookup(&zero);
	if (bz && b && !*(volatile u32 *)bz) {
		*(volatile u32 *)bz = 1;
		u32 i = b->hdr.count;
		if (i == 0)
			b->hdr.first_ns = now;
		b->recs[i & (IOFP_SYNC_BATCH - 1)] = *rec;
		b->hdr.count = i + 1;
		if (i + 1 >= IOFP_SYNC_BATCH || now - b->hdr.first_ns >= IOFP_FLUSH_NS)
			send_sync(b);
		*(volatile u32 *)bz = 0;
	} else if (bz) {
		struct iofp_sync_single one = {};
		one.hdr.kind = IOFP_KIND_SYNC;
		one.hdr.count = 1;
		one.hdr.first_ns = now;
		one.rec = *rec;
		if (events.ringbuf_output(&one, sizeof(one), IOFP_RB_FLAGS) == 0)
			count(IOFP_CNT_SYNC_RECORDS, 1);
		else
			count(IOFP_CNT_LOST_SYNC_RINGBUF, 1);
	}
}

static __always_inline int sync_exit(s64 ret)
{
	u32 zero = 0;
	s64 *pending = sync_pending.lookup(&zero);
	if (!pending || *(volatile s64 *)pending <= 0)
		return 0;
	u32 tid = (u32)bpf_get_current_pid_tgid();
	struct iofp_sync_start *s = sync_calls.lookup(&tid);
	if (!s)
		return 0;
	struct iofp_sync_rec rec = {};
	u32 pid = current_who(rec.comm);
	if (submitter_wanted(pid, rec.comm)) {
		u64 now = bpf_ktime_get_ns();
		rec.enter_ns = s->enter_ns;
		rec.exit_ns = now;
		rec.ret = ret;
		rec.offset = s->offset;
		rec.pid = pid;
		rec.tid = tid;
		rec.fd = s->fd;
		rec.dev = s->dev;
		u32 data = s->data;
		if (s->call != IOFP_NO_CALL) {
			rec.call = s->call;
			emit_sync(&rec, now);
		}
		if (data != IOFP_NO_CALL) {
			rec.call = data;
			emit_sync(&rec, now);
		}
	}
	if (sync_calls.delete(&tid) == 0)
		__sync_fetch_and_add(pending, -1);
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
/* data calls: IOFP_DATA_<NAME> is the index of the name in iofp.contract.DATA_CALLS, from the loader.
 * The write family is probed for O_DSYNC commits or for the data calls (IOFP_WRITE_CALLS): every
 * write(2) on the machine then costs ~0.3 us more (BENCHMARKS, bench.record_cost --writes). */
#ifdef IOFP_WRITE_CALLS
TRACEPOINT_PROBE(syscalls, sys_enter_write) { return data_enter(args->fd, IOFP_DATA_WRITE, IOFP_NO_OFFSET, 0, true); }
TRACEPOINT_PROBE(syscalls, sys_exit_write) { return sync_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_pwrite64) { return data_enter(args->fd, IOFP_DATA_PWRITE64, args->pos, 0, true); }
TRACEPOINT_PROBE(syscalls, sys_exit_pwrite64) { return sync_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_writev) { return data_enter(args->fd, IOFP_DATA_WRITEV, IOFP_NO_OFFSET, 0, true); }
TRACEPOINT_PROBE(syscalls, sys_exit_writev) { return sync_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_pwritev) { return data_enter(args->fd, IOFP_DATA_PWRITEV, args->pos_l, 0, true); }
TRACEPOINT_PROBE(syscalls, sys_exit_pwritev) { return sync_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_pwritev2)
{
	return data_enter(args->fd, IOFP_DATA_PWRITEV2, args->pos_l, args->flags, true);
}
TRACEPOINT_PROBE(syscalls, sys_exit_pwritev2) { return sync_exit(args->ret); }
#endif
#ifdef IOFP_DATA_CALLS /* a read is never a commit: probed only for the data calls */
TRACEPOINT_PROBE(syscalls, sys_enter_read) { return data_enter(args->fd, IOFP_DATA_READ, IOFP_NO_OFFSET, 0, false); }
TRACEPOINT_PROBE(syscalls, sys_exit_read) { return sync_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_pread64) { return data_enter(args->fd, IOFP_DATA_PREAD64, args->pos, 0, false); }
TRACEPOINT_PROBE(syscalls, sys_exit_pread64) { return sync_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_readv) { return data_enter(args->fd, IOFP_DATA_READV, IOFP_NO_OFFSET, 0, false); }
TRACEPOINT_PROBE(syscalls, sys_exit_readv) { return sync_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_preadv) { return data_enter(args->fd, IOFP_DATA_PREADV, args->pos_l, 0, false); }
TRACEPOINT_PROBE(syscalls, sys_exit_preadv) { return sync_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_preadv2) { return data_enter(args->fd, IOFP_DATA_PREADV2, args->pos_l, 0, false); }
TRACEPOINT_PROBE(syscalls, sys_exit_preadv2) { return sync_exit(args->ret); }
#endif

#ifdef IOFP_AIO
/* struct iocb (uapi linux/aio_abi.h) from aio_lio_opcode on: the fields an iocb's data call needs */
#define IOFP_IOCB_OPCODE_OFF 16
struct iofp_iocb {
	u16 opcode; /* IOCB_CMD_PREAD 0, PWRITE 1, PREADV 7, PWRITEV 8 */
	s16 reqprio;
	u32 fildes;
	u64 buf;
	u64 nbytes;
	s64 offset;
};
struct iofp_io_event {
	u64 data;
	u64 obj; /* the iocb's user-space address */
	s64 res;
	s64 res2;
};
struct iofp_aio_batch {
	struct iofp_batch_hdr hdr;
	struct iofp_sync_rec recs[IOFP_AIO_MAX];
};
BPF_PERCPU_ARRAY(aio_scratch, struct iofp_aio_batch, 1);
_Static_assert((IOFP_AIO_MAX & (IOFP_AIO_MAX - 1)) == 0 && IOFP_AIO_MAX <= IOFP_SYNC_BATCH,
	       "IOFP_AIO_MAX: a power of two, at most IOFP_SYNC_BATCH (a reap fits the syscall batch)");

static __always_inline u32 aio_slot_of(u64 iocb, u32 tgid)
{
	return (u32)((((iocb >> 3) ^ ((u64)tgid << 40)) * 0x9E3779B97F4A7C15ULL) >> (64 - IOFP_AIO_SLOT_BITS));
}

/* Track iocb `k` as `v`: in its slot when that is free, else in the hash map. One the caller already
 * has tracked (reaped without our seeing) is replaced where it is: still one entry. */
static __always_inline void aio_track(struct iofp_aio_key *k, struct iofp_aio *v)
{
	u32 zero = 0;
	u32 i = aio_slot_of(k->iocb, k->tgid);
	struct iofp_aio_slot *s = aio_slots.lookup(&i);
	s64 *pending = aio_pending.lookup(&zero);
	s64 *hashed = aio_hashed.lookup(&zero);
	if (!s || !pending || !hashed)
		return;
	if (s->iocb == k->iocb && *(volatile u32 *)&s->tgid == k->tgid) {
		__builtin_memcpy(&s->v, v, sizeof(*v));
		return;
	}
	if (*(volatile s64 *)hashed > 0 && aio_iocbs.lookup(k)) {
		if (aio_iocbs.update(k, v) != 0)
			count(IOFP_CNT_LOST_AIO_MAP_FULL, 1);
		return;
	}
	if (s->iocb == 0 && __sync_val_compare_and_swap(&s->iocb, 0, k->iocb) == 0) {
		__builtin_memcpy(&s->v, v, sizeof(*v));
		*(volatile u32 *)&s->tgid = k->tgid; /* last: the entry is whole once a reaper matches it */
		__sync_fetch_and_add(pending, 1);
		return;
	}
	if (aio_iocbs.insert(k, v) == 0) {
		__sync_fetch_and_add(pending, 1);
		__sync_fetch_and_add(hashed, 1);
	} else if (aio_iocbs.update(k, v) != 0) { /* there already: replaced, still one */
		count(IOFP_CNT_LOST_AIO_MAP_FULL, 1);
	}
}

/* io_submit: each data iocb (up to IOFP_AIO_MAX of one call) on a captured device, from now. An
 * iocb of the caller's that is already tracked is one it reaped without our seeing (a capture that
 * started while it was in flight); it is replaced. (bcc cannot pass bpf_loop a callback, so the
 * loops over iocbs and events are unrolled, and kept free of branches that would multiply the
 * verifier's paths.) */
TRACEPOINT_PROBE(syscalls, sys_enter_io_submit)
{
	char comm[IOFP_COMM_LEN] = {};
	u32 pid = current_who(comm);
	if (!submitter_wanted(pid, comm))
		return 0;
	long nr = args->nr;
	u64 iocbpp = (u64)args->iocbpp;
	u64 now = bpf_ktime_get_ns();
	if (nr > IOFP_AIO_MAX)
		count(IOFP_CNT_LOST_AIO_BATCH, nr - IOFP_AIO_MAX);
	s32 last_fd = -1; /* the iocbs of one call are mostly on one file: look it up once */
	u32 last_dev = 0;
	bool last_ok = false;
#pragma unroll
	for (u32 i = 0; i < IOFP_AIO_MAX; i++) {
		if (i >= nr)
			break;
		u64 p = 0;
		struct iofp_iocb cb = {};
		bpf_probe_read_user(&p, sizeof(p), (void *)(iocbpp + 8 * (u64)i));
		if (bpf_probe_read_user(&cb, sizeof(cb), (void *)(p + IOFP_IOCB_OPCODE_OFF)) != 0)
			continue;
		u32 data = cb.opcode == 0 || cb.opcode == 7 ? IOFP_DATA_AIO_READ
			 : cb.opcode == 1 || cb.opcode == 8 ? IOFP_DATA_AIO_WRITE : IOFP_NO_CALL;
		if (data == IOFP_NO_CALL)
			continue;
		if ((s32)cb.fildes != last_fd) {
			last_fd = (s32)cb.fildes;
			bool open = false;
			/* The first iocb's file through fd_dev's typed loads; a later iocb's on another file
			 * through probe reads: fd_file_typed's 64 cases in each unrolled iteration were more
			 * paths than the verifier explores (a call's iocbs are mostly on one file) */
			if (i == 0)
				last_dev = fd_dev(last_fd, &open);
			else
				last_dev = fd_dev_probed(last_fd, &open);
			last_ok = open && dev_captured(last_dev);
		}
		if (!last_ok)
			continue;
		struct iofp_aio_key k = {};
		k.iocb = p;
		k.tgid = pid;
		struct iofp_aio v = {};
		v.submit_ns = now;
		v.offset = (u64)cb.offset;
		v.fd = (s32)cb.fildes;
		v.data = data;
		v.dev = last_dev;
		aio_track(&k, &v);
	}
	return 0;
}

#ifndef IOFP_OFF_PT_REGS_ARG4
static __always_inline int aio_reap_enter(u64 events)
{
	/* Not gated on aio_pending: a reaper thread blocked here may reap an iocb submitted after it
	 * entered (a completion thread beside the submitters) */
	char comm[IOFP_COMM_LEN] = {};
	u32 pid = current_who(comm);
	if (!submitter_wanted(pid, comm))
		return 0;
	u32 zero = 0;
	s64 *reaping = aio_reaping.lookup(&zero);
	if (!reaping)
		return 0;
	u32 tid = (u32)bpf_get_current_pid_tgid();
	if (aio_reaps.update(&tid, &events) == 0)
		__sync_fetch_and_add(reaping, 1);
	return 0;
}
#endif

/* The tracked iocbs among the first n events of a reap, appended as records to `recs` at h->count
 * (slot index masked by `mask`, the array's size - 1), each untracked from aio_iocbs. A bounded loop
 * that stops at n: a reap of one event looks at one slot, not IOFP_AIO_MAX. The count is kept in the
 * map value, not a register, so that the verifier sees one state per iteration whatever matched. */
static __always_inline void reap_into(struct iofp_batch_hdr *h, struct iofp_sync_rec *recs, u32 mask, u64 evs,
				      u32 n, u64 now, u32 pid, u32 tid, const char *comm, s64 *pending, s64 *hashed)
{
	for (u32 i = 0; i < IOFP_AIO_MAX && i < n; i++) {
		struct iofp_io_event e = {};
		bpf_probe_read_user(&e, sizeof(e), (void *)(evs + sizeof(e) * (u64)i));
		struct iofp_aio_key k = {};
		k.iocb = e.obj;
		k.tgid = pid;
		u32 si = aio_slot_of(e.obj, pid);
		struct iofp_aio_slot *s = aio_slots.lookup(&si);
		struct iofp_aio_slot *slot = NULL; /* where it is tracked: its slot, or (NULL) the hash map */
		struct iofp_aio *v = NULL;
		if (s && e.obj && s->iocb == e.obj && *(volatile u32 *)&s->tgid == pid) {
			slot = s;
			v = &s->v;
		} else if (*(volatile s64 *)hashed > 0) {
			v = aio_iocbs.lookup(&k);
		}
		if (!v)
			continue;
		u32 c = *(volatile u32 *)&h->count;
		struct iofp_sync_rec *rec = &recs[c & mask];
		rec->enter_ns = v->submit_ns;
		rec->exit_ns = now;
		rec->ret = e.res;
		rec->offset = v->offset;
		rec->pid = pid;
		rec->tid = tid;
		rec->fd = v->fd;
		rec->call = v->data;
		rec->dev = v->dev;
		rec->_pad = 0;
		__builtin_memcpy(rec->comm, comm, IOFP_COMM_LEN);
		*(volatile u32 *)&h->count = c + 1;
		if (slot) {
			*(volatile u32 *)&slot->tgid = 0;
			__sync_lock_test_and_set(&slot->iocb, 0); /* a full barrier: our reads of it are done */
			__sync_fetch_and_add(pending, -1);
		} else if (aio_iocbs.delete(&k) == 0) {
			__sync_fetch_and_add(pending, -1);
			__sync_fetch_and_add(hashed, -1);
		}
	}
}

/* io_getevents' return: each reaped iocb that io_submit tracked is a data call, submit to now,
 * written straight into this CPU's syscall batch (a ring record per reap cost the capture's user
 * side a callback each: 2.6 us of its CPU per I/O at 30,000 reads/s, 5x the batched I/O's); through
 * the per-CPU scratch, sent alone, only when the batch is being appended to by a program we
 * interrupted. Events whose iocb was not tracked (another process's, another device's) leave no
 * record; a reap with none sends nothing. Only syscall exits use the scratch, in process context on
 * a kernel without forced preemption. */
static __always_inline int aio_reap_exit(long ret)
{
	u32 zero = 0;
#ifdef IOFP_OFF_PT_REGS_ARG4
	/* The io_event array is the call's 4th argument, still in the task's saved user registers at
	 * its exit: no entry probe and no per-thread map (they cost ~0.3 us a reap at 20k IOPS), and a
	 * reaper already blocked when the capture started is seen as well. */
	s64 *pending = aio_pending.lookup(&zero);
	if (ret <= 0 || !pending || *(volatile s64 *)pending <= 0)
		return 0; /* nothing tracked now: no event of this reap can be a data call of ours */
	char comm[IOFP_COMM_LEN] = {};
	u32 pid = current_who(comm);
	if (!submitter_wanted(pid, comm))
		return 0;
	char *regs = (char *)bpf_task_pt_regs(bpf_get_current_task_btf());
	u64 evs = *(u64 *)(regs + IOFP_OFF_PT_REGS_ARG4);
	u32 tid = (u32)bpf_get_current_pid_tgid();
#else
	s64 *reaping = aio_reaping.lookup(&zero);
	if (!reaping || *(volatile s64 *)reaping <= 0)
		return 0;
	u32 tid = (u32)bpf_get_current_pid_tgid();
	u64 *ev = aio_reaps.lookup(&tid);
	if (!ev)
		return 0;
	u64 evs = *ev; /* the io_event array in user memory */
	if (aio_reaps.delete(&tid) == 0)
		__sync_fetch_and_add(reaping, -1);
	s64 *pending = aio_pending.lookup(&zero);
	if (ret <= 0 || !pending || *(volatile s64 *)pending <= 0)
		return 0; /* nothing tracked now: no event of this reap can be a data call of ours */
	char comm[IOFP_COMM_LEN] = {};
	u32 pid = current_who(comm);
#endif
	if (ret > IOFP_AIO_MAX)
		count(IOFP_CNT_LOST_AIO_BATCH, ret - IOFP_AIO_MAX);
	u32 n = ret < IOFP_AIO_MAX ? (u32)ret : IOFP_AIO_MAX;
	u64 now = bpf_ktime_get_ns();
	u32 *bz = busy.lookup(&zero);
	struct iofp_sync_batch *sb = sync_batch.lookup(&zero);
	s64 *hashed = aio_hashed.lookup(&zero);
	if (!bz || !hashed)
		return 0;
	if (sb && !*(volatile u32 *)bz) {
		*(volatile u32 *)bz = 1;
		if (sb->hdr.count + n > IOFP_SYNC_BATCH)
			send_sync(sb);
		u32 c = sb->hdr.count;
		reap_into(&sb->hdr, sb->recs, IOFP_SYNC_BATCH - 1, evs, n, now, pid, tid, comm, pending, hashed);
		u32 after = sb->hdr.count;
		if (after != c) {
			if (c == 0)
				sb->hdr.first_ns = now;
			if (after >= IOFP_SYNC_BATCH || now - sb->hdr.first_ns >= IOFP_FLUSH_NS)
				send_sync(sb);
		}
		*(volatile u32 *)bz = 0;
		return 0;
	}
	struct iofp_aio_batch *b = aio_scratch.lookup(&zero);
	if (!b)
		return 0;
	b->hdr.count = 0;
	reap_into(&b->hdr, b->recs, IOFP_AIO_MAX - 1, evs, n, now, pid, tid, comm, pending, hashed);
	u32 m = b->hdr.count;
	if (!m || m > IOFP_AIO_MAX)
		return 0;
	b->hdr.kind = IOFP_KIND_SYNC;
	b->hdr.first_ns = now;
	u64 size = sizeof(struct iofp_batch_hdr) + (u64)m * sizeof(struct iofp_sync_rec);
	asm volatile("" : "+r"(size)); /* the bound below checked on the register the helper gets */
	if (size > sizeof(*b))
		return 0;
	if (events.ringbuf_output(b, size, IOFP_RB_FLAGS) == 0)
		count(IOFP_CNT_SYNC_RECORDS, m);
	else
		count(IOFP_CNT_LOST_SYNC_RINGBUF, m);
	return 0;
}

#ifndef IOFP_OFF_PT_REGS_ARG4
TRACEPOINT_PROBE(syscalls, sys_enter_io_getevents) { return aio_reap_enter((u64)args->events); }
TRACEPOINT_PROBE(syscalls, sys_enter_io_pgetevents) { return aio_reap_enter((u64)args->events); }
#endif
TRACEPOINT_PROBE(syscalls, sys_exit_io_getevents) { return aio_reap_exit(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_exit_io_pgetevents) { return aio_reap_exit(args->ret); }
#endif
#endif
