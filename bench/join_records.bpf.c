/* bench/capture_overhead.py's `join` mode: what the "issue records joined offline" design of issue
 * 18 costs in the kernel, before anyone builds it. Every program appends one fixed-size record to
 * its CPU's batch and nothing else: no table shared between the submitting and the completing CPU,
 * no in-flight atomics, no pairing (user space would join by request pointer). A full batch goes to
 * the ring buffer. Left out, so that this is a floor of the design rather than the design: the
 * device filter, the interrupted-append guard (a completion interrupting an append on its CPU may
 * corrupt one record here), the flush machinery's bookkeeping.
 *
 * Defines: bpf/loader.py's field offsets (IOFP_OFF_*, IOFP_RQ_SPAN_OFF/LEN), JOIN_BATCH (a power
 * of two), JOIN_RINGBUF_PAGES. */
#include <uapi/linux/ptrace.h>

#define JOIN_START 1
#define JOIN_ISSUE 2
#define JOIN_DONE 3

/* 48 bytes whatever the kind: start = (rq, 0, comm[0..8], comm[8..16], pid);
 * issue = (rq, now, sector, start_time_ns, bytes, cmd_flags); done = (rq, now) */
struct join_rec {
	u64 rq;
	u64 ns;
	u64 a;
	u64 b;
	u32 c;
	u32 d;
	u32 kind;
	u32 pid;
};

struct join_batch {
	u32 count;
	u32 _pad;
	struct join_rec recs[JOIN_BATCH];
};

BPF_PERCPU_ARRAY(batch, struct join_batch, 1);
BPF_RINGBUF_OUTPUT(events, JOIN_RINGBUF_PAGES);

static __always_inline struct join_rec *slot(struct join_batch **out)
{
	u32 zero = 0;
	struct join_batch *b = batch.lookup(&zero);
	*out = b;
	if (!b)
		return 0;
	return &b->recs[b->count & (JOIN_BATCH - 1)];
}

static __always_inline void done_with(struct join_batch *b)
{
	u32 n = b->count + 1;
	b->count = n;
	if (n >= JOIN_BATCH) {
		events.ringbuf_output(b, sizeof(*b), BPF_RB_NO_WAKEUP);
		b->count = 0;
	}
}

RAW_TRACEPOINT_PROBE(block_io_start)
{
	struct join_batch *b;
	struct join_rec *r = slot(&b);
	if (!r)
		return 0;
	char *task = (char *)bpf_get_current_task_btf();
	r->rq = ctx->args[0];
	r->ns = 0;
	r->a = *(u64 *)(task + IOFP_OFF_TASK_COMM);
	r->b = *(u64 *)(task + IOFP_OFF_TASK_COMM + 8);
	r->kind = JOIN_START;
	r->pid = *(u32 *)(task + IOFP_OFF_TASK_TGID);
	done_with(b);
	return 0;
}

RAW_TRACEPOINT_PROBE(block_rq_issue)
{
	u64 rq = ctx->args[0];
	u64 now = bpf_ktime_get_ns();
	u8 span[IOFP_RQ_SPAN_LEN];
	bpf_probe_read_kernel(span, sizeof(span), (void *)(rq + IOFP_RQ_SPAN_OFF));
	struct join_batch *b;
	struct join_rec *r = slot(&b);
	if (!r)
		return 0;
	r->rq = rq;
	r->ns = now;
	__builtin_memcpy(&r->a, span + (IOFP_OFF_RQ_SECTOR - IOFP_RQ_SPAN_OFF), 8);
	__builtin_memcpy(&r->b, span + (IOFP_OFF_RQ_START_TIME - IOFP_RQ_SPAN_OFF), 8);
	__builtin_memcpy(&r->c, span + (IOFP_OFF_RQ_DATA_LEN - IOFP_RQ_SPAN_OFF), 4);
	__builtin_memcpy(&r->d, span + (IOFP_OFF_RQ_CMD_FLAGS - IOFP_RQ_SPAN_OFF), 4);
	r->kind = JOIN_ISSUE;
	done_with(b);
	return 0;
}

RAW_TRACEPOINT_PROBE(block_rq_complete)
{
	u64 now = bpf_ktime_get_ns();
	struct join_batch *b;
	struct join_rec *r = slot(&b);
	if (!r)
		return 0;
	r->rq = ctx->args[0];
	r->ns = now;
	r->kind = JOIN_DONE;
	done_with(b);
	return 0;
}
