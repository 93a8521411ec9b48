/* Prints the layout of bpf/iofp_record.h as the C compiler sees it; tests/test_capture_record.py
 * compares it with the numpy dtypes in bpf/record.py. */
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "iofp_record.h"

#define FIELD(s, f) printf("%s %s %zu %zu\n", #s, #f, offsetof(struct s, f), sizeof(((struct s *)0)->f))

int main(void)
{
	printf("iofp_io_rec SIZE 0 %zu\n", sizeof(struct iofp_io_rec));
	FIELD(iofp_io_rec, issue_ns);
	FIELD(iofp_io_rec, queue_ns);
	FIELD(iofp_io_rec, complete_ns);
	FIELD(iofp_io_rec, sector);
	FIELD(iofp_io_rec, bytes);
	FIELD(iofp_io_rec, cmd_flags);
	FIELD(iofp_io_rec, dev);
	FIELD(iofp_io_rec, pid);
	FIELD(iofp_io_rec, inflight);
	FIELD(iofp_io_rec, error);
	FIELD(iofp_io_rec, _pad);
	FIELD(iofp_io_rec, comm);
	printf("iofp_sync_rec SIZE 0 %zu\n", sizeof(struct iofp_sync_rec));
	FIELD(iofp_sync_rec, enter_ns);
	FIELD(iofp_sync_rec, exit_ns);
	FIELD(iofp_sync_rec, ret);
	FIELD(iofp_sync_rec, offset);
	FIELD(iofp_sync_rec, pid);
	FIELD(iofp_sync_rec, tid);
	FIELD(iofp_sync_rec, fd);
	FIELD(iofp_sync_rec, call);
	FIELD(iofp_sync_rec, dev);
	FIELD(iofp_sync_rec, _pad);
	FIELD(iofp_sync_rec, comm);
	printf("iofp_batch_hdr SIZE 0 %zu\n", sizeof(struct iofp_batch_hdr));
	FIELD(iofp_batch_hdr, kind);
	FIELD(iofp_batch_hdr, count);
	FIELD(iofp_batch_hdr, first_ns);
	return 0;
}
