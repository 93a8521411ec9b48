/* bench/completion_skips.py: an independent witness, nothing of iofp's. It counts the block_rq_complete
 * calls it runs for one device (KDEV), so that its shortfall against tracefs shows what any raw
 * tracepoint program misses. Offsets are -D defines from BTF, as in bpf/capture.bpf.c. */
BPF_ARRAY(seen, u64, 1);

RAW_TRACEPOINT_PROBE(block_rq_complete)
{
	u64 rq = ctx->args[0], q = 0, disk = 0;
	u32 mm[2] = {};
	bpf_probe_read_kernel(&q, sizeof(q), (void *)(rq + OFF_RQ_Q));
	bpf_probe_read_kernel(&disk, sizeof(disk), (void *)(q + OFF_Q_DISK));
	bpf_probe_read_kernel(mm, sizeof(mm), (void *)(disk + OFF_DISK_MAJOR));
	if (((mm[0] << 20) | mm[1]) != KDEV)
		return 0;
	u32 zero = 0;
	u64 *n = seen.lookup(&zero);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}
