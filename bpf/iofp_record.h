/* The records iofp's eBPF program hands to user space, shared by capture.bpf.c and bpf/record.py.
 *
 * Records are not sent one by one: the kernel fills a per-CPU batch and sends the whole batch through
 * the ring buffer (a header, then `count` records), so user space pays one call per batch and converts
 * it with numpy. bpf/record.py declares the same layout as numpy dtypes; the loader passes the numpy
 * sizes in as IOFP_IO_REC_SIZE / IOFP_SYNC_REC_SIZE and the static asserts below refuse to compile a
 * program whose layout disagrees with Python's.
 */
#ifndef IOFP_RECORD_H
#define IOFP_RECORD_H

#ifndef IOFP_IO_BATCH
#define IOFP_IO_BATCH 64 /* records per batch; a power of two */
#endif
#ifndef IOFP_SYNC_BATCH
#define IOFP_SYNC_BATCH 16
#endif

#define IOFP_COMM_LEN 16

/* complete_ns of a request whose completion never ran our program (bpf/witness.py) */
#define IOFP_UNSEEN (1ULL << 63)

enum iofp_kind {
	IOFP_KIND_IO = 1,
	IOFP_KIND_SYNC = 2,
};

/* One completed block request. Times are bpf_ktime_get_ns() (CLOCK_MONOTONIC). */
struct iofp_io_rec {
	__u64 issue_ns;    /* block_rq_issue: handed to the driver */
	__u64 queue_ns;    /* block_io_start (or insert): entered the block layer; 0 = unknown */
	__u64 complete_ns; /* block_rq_complete; with IOFP_UNSEEN: not seen, found out at the rest */
	__u64 sector;      /* 512-byte sectors, whole-disk relative */
	__u32 bytes;
	__u32 cmd_flags; /* REQ_OP_* | REQ_* bits as issued; decoded in user space from BTF enums */
	__u32 dev;       /* kernel dev_t of the disk: major << 20 | minor */
	__u32 pid;       /* submitting thread group; 0 = unknown */
	__s32 inflight;  /* tracked requests in flight on dev at issue, this one included */
	__s16 error;     /* blk_status_t */
	__u16 _pad;
	char comm[IOFP_COMM_LEN];
};

/* Offset of a call that names none (read, write: the file position) */
#define IOFP_NO_OFFSET (~0ULL)

/* One syscall: an fsync-family call, or an application's data call on a captured device (an O_DIRECT
 * read or write, or a libaio iocb from its io_submit to the io_getevents that reaps it). A data
 * call's time is what the application waited, including any wait above the block layer: blk-throttle
 * holds a bio before every block tracepoint, so no request time can show it. */
struct iofp_sync_rec {
	__u64 enter_ns; /* entry; an iocb's io_submit entry */
	__u64 exit_ns;  /* return; an iocb's reaping (io_getevents' return) */
	__s64 ret;      /* return value; an iocb's res (bytes done or -errno) */
	__u64 offset;   /* the file offset asked for, or IOFP_NO_OFFSET */
	__u32 pid; /* thread group */
	__u32 tid;
	__s32 fd; /* -1 for calls without one (sync, msync) */
	__u32 call; /* index into iofp.contract.SYNC_CALLS; IOFP_DATA_CALL_BASE + index into DATA_CALLS */
	__u32 dev;  /* the file's device (kernel dev_t); 0: none (tmpfs, sync) or not looked up */
	__u32 _pad;
	char comm[IOFP_COMM_LEN];
};

struct iofp_batch_hdr {
	__u32 kind;  /* enum iofp_kind */
	__u32 count; /* records that follow */
	__u64 first_ns; /* when the oldest record in the batch was added */
};

struct iofp_io_batch {
	struct iofp_batch_hdr hdr;
	struct iofp_io_rec recs[IOFP_IO_BATCH];
};

struct iofp_sync_batch {
	struct iofp_batch_hdr hdr;
	struct iofp_sync_rec recs[IOFP_SYNC_BATCH];
};

/* Per-CPU counters (BPF_PERCPU_ARRAY `counters`); names in bpf/record.py COUNTERS, same order. */
enum iofp_counter {
	IOFP_CNT_IO_RECORDS = 0,      /* io records handed to the ring buffer */
	IOFP_CNT_SYNC_RECORDS,        /* sync records handed to the ring buffer */
	IOFP_CNT_LOST_IO_RINGBUF,     /* io records dropped: ring buffer full */
	IOFP_CNT_LOST_IO_MAP_FULL,    /* requests not tracked: in-flight map full */
	IOFP_CNT_LOST_SYNC_RINGBUF,   /* sync records dropped: ring buffer full */
	IOFP_CNT_LOST_SYNC_MAP_FULL,  /* syscalls not tracked: map full */
	IOFP_CNT_UNMATCHED_COMPLETIONS, /* completions of requests issued before the capture started */
	IOFP_CNT_COMPLETED_UNISSUED,    /* requests completed without being issued (flush barriers) */
	IOFP_CNT_FLUSH_BUSY,          /* timer flushes that found the batch in use (retried) */
	IOFP_CNT_COMPLETIONS,         /* block_rq_complete runs for tracked requests */
	IOFP_CNT_UNSEEN_COMPLETIONS,  /* requests whose completion never ran our program (sent marked unseen) */
	IOFP_CNT_SYNC_OTHER_DEVICE,   /* fsync-family calls on files of devices not captured (not recorded) */
	IOFP_CNT_FLUSH_SEQ_FINAL,     /* second completions of data requests in a flush sequence (expected) */
	IOFP_CNT_EARLY_OVERFLOW,      /* completions from before the capture beyond the `early` table */
	IOFP_CNT_LOST_AIO_MAP_FULL,   /* libaio iocbs not tracked: map full (their data calls are lost) */
	IOFP_CNT_LOST_AIO_BATCH,      /* iocbs past the first IOFP_AIO_MAX of one io_submit, or reaped past one io_getevents' */
	IOFP_CNT_SYNC_NO_DEVICE,      /* sync(2)/msync(2) left out by --device: they name no file */
	IOFP_CNT_COMPLETED_AFTER_STOP, /* untracked completions once block_rq_issue's detach began: not early */
	IOFP_NCOUNTERS,
};

#endif /* IOFP_RECORD_H */
