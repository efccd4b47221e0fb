// Lists loaded BPF programs with the kernel's own run accounting
// (needs kernel.bpf_stats_enabled=1 while the programs run).
// Output: one line per program:
//   id type run_cnt run_time_ns name xlated_insns jited_bytes verified_insns
// (the last three after the name, so that readers of the first five still work)
#define _GNU_SOURCE
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

static long sys_bpf(int cmd, union bpf_attr *attr) {
    return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

int main(void) {
    unsigned id = 0;
    for (;;) {
        union bpf_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.start_id = id;
        if (sys_bpf(BPF_PROG_GET_NEXT_ID, &attr)) break;
        id = attr.next_id;
        memset(&attr, 0, sizeof(attr));
        attr.prog_id = id;
        int fd = (int)sys_bpf(BPF_PROG_GET_FD_BY_ID, &attr);
        if (fd < 0) continue;
        struct bpf_prog_info info;
        memset(&info, 0, sizeof(info));
        memset(&attr, 0, sizeof(attr));
        attr.info.bpf_fd = fd;
        attr.info.info_len = sizeof(info);
        attr.info.info = (unsigned long)&info;
        if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr) == 0)
            printf("%u %u %llu %llu %s %u %u %u\n", info.id, info.type,
                   (unsigned long long)info.run_cnt,
                   (unsigned long long)info.run_time_ns,
                   info.name[0] ? info.name : "-",
                   info.xlated_prog_len / 8, info.jited_prog_len,
                   info.verified_insns);
        close(fd);
    }
    return 0;
}
