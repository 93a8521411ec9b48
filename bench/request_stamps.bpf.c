/* bench/request_stamps.py: how far the block layer's own per-request stamps are from the clock.
 * At block_io_start the request's entry time is taken with bpf_ktime_get_ns() (kept in `entered`);
 * at block_rq_issue the clock is read again and compared with the request's own stamps:
 *   rq->io_start_time_ns  set by blk_mq_start_request() only if the queue keeps I/O statistics
 *                         (QUEUE_FLAG_STATS: wbt, iolatency, ...): the issue time a map-free tracer
 *                         would use (bcc's biolatpcts);
 *   rq->start_time_ns     set when the request entered the block layer (iostats): the queue time.
 * Since v6.9 both come from blk_time_get_ns(), which returns a time cached in the task's plug.
 * Only device KDEV. Offsets are -D defines from BTF, as in bpf/capture.bpf.c. */
BPF_HASH(entered, u64, u64, 65536);
BPF_HISTOGRAM(issue_late, int, 64);   /* log2(ns): clock at issue - io_start_time_ns */
BPF_HISTOGRAM(entry_early, int, 64);  /* log2(ns): clock at block_io_start - start_time_ns */
BPF_HISTOGRAM(entry_late, int, 64);   /* log2(ns): start_time_ns - clock at block_io_start */
/* 0 issued, 1 io_start_time_ns 0, 2 io_start_time_ns after the clock, 3 start_time_ns 0,
 * 4 entered unseen (issued before the program attached) */
BPF_ARRAY(counts, u64, 5);

static __always_inline void bump(int k)
{
	u64 *c = counts.lookup(&k);
	if (c)
		__sync_fetch_and_add(c, 1);
}

static __always_inline bool ours(u64 rq)
{
	u64 q = 0, disk = 0;
	u32 mm[2] = {};
	bpf_probe_read_kernel(&q, sizeof(q), (void *)(rq + OFF_RQ_Q));
	bpf_probe_read_kernel(&disk, sizeof(disk), (void *)(q + OFF_Q_DISK));
	bpf_probe_read_kernel(mm, sizeof(mm), (void *)(disk + OFF_DISK_MAJOR));
	return ((mm[0] << 20) | mm[1]) == KDEV;
}

RAW_TRACEPOINT_PROBE(block_io_start)
{
	u64 rq = ctx->args[0];
	if (!ours(rq))
		return 0;
	u64 now = bpf_ktime_get_ns();
	entered.update(&rq, &now);
	return 0;
}

RAW_TRACEPOINT_PROBE(block_rq_issue)
{
	u64 rq = ctx->args[0];
	if (!ours(rq))
		return 0;
	u64 now = bpf_ktime_get_ns();
	u64 io_start = 0, start = 0;
	bpf_probe_read_kernel(&io_start, sizeof(io_start), (void *)(rq + OFF_RQ_IO_START));
	bpf_probe_read_kernel(&start, sizeof(start), (void *)(rq + OFF_RQ_START));
	bump(0);
	if (!io_start)
		bump(1);
	else if (io_start > now)
		bump(2);
	else
		issue_late.increment(bpf_log2l(now - io_start));
	u64 *t = entered.lookup(&rq);
	if (!t) {
		bump(4);
		return 0;
	}
	if (!start)
		bump(3);
	else if (start <= *t)
		entry_early.increment(bpf_log2l(*t - start));
	else
		entry_late.increment(bpf_log2l(start - *t));
	entered.delete(&rq);
	return 0;
}
