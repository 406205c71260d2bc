/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ndst.ko: the test module of the 2009 netdev teardown experiment, rebuilt.
 *
 * Shared declarations of the module's parts:
 *   dev.c     the module's own device type (kind "ndst") and ownership test
 *   ops.c     add and del: register and unregister the module's devices, timed
 *   hold.c    extra references on the module's devices, released by a timer
 *   sysctl.c  the /proc/sys/net/ndst files of every network namespace
 *   main.c    per-namespace state, module load and unload
 */
#ifndef NDST_H
#define NDST_H

#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/types.h>
#include <linux/version.h>
#include <net/net_namespace.h>

/* Most devices one write to add may create: the kernel's "%d" name
 * allocator finds free numbers in one page of bits (32768 names per
 * template), so more could not all be named. */
#define NDST_MAX_ADD 32768U
/* Longest hold, in milliseconds (10 minutes): every hold ends by itself. */
#define NDST_MAX_HOLD_MS 600000U
/* Most holds at one time, over all namespaces. */
#define NDST_MAX_HOLDS 1024U
/* Longest line a write may carry ("START STOP\n", "N TEMPLATE\n"). */
#define NDST_MAX_WRITE 64U

/* The outcome of one add, del or del_batch. */
struct ndst_result {
	u64 seq;		/* 1 for the namespace's first operation, then +1 */
	const char *op;		/* "add", "del" or "del_batch"; NULL: none yet */
	int err;		/* 0, or the error the write returned */
	u32 count;		/* devices created or unregistered */
	u32 skipped;		/* devices in a del range the module did not create */
	u64 ns;			/* in-kernel duration of the whole write */
	u64 *samples;		/* per-device durations (add, del); NULL for del_batch */
	u32 nsamples;
};

/* Per network namespace state (net_generic). */
struct ndst_net {
	struct net *net;
	/* Serialises the writers of add, del and del_batch. */
	struct mutex op_lock;
	/* Guards the results below; held only to publish or format them. */
	struct mutex res_lock;
	u64 seq;
	struct ndst_result last;	/* the most recent operation, with samples */
	struct ndst_result last_add;	/* the most recent of each kind, no samples */
	struct ndst_result last_del;
	struct ndst_result last_del_batch;
	/* Set (under the holds' lock) when the namespace goes away: no new holds. */
	bool closing;
	struct ctl_table *table;
	struct ctl_table_header *sysctl;
};

/* dev.c */
int ndst_dev_init(void);
void ndst_dev_exit(void);
bool ndst_owns(const struct net_device *dev);
bool ndst_valid_template(const char *tmpl);
struct net_device *ndst_dev_alloc(struct net *net, const char *tmpl);

/* ops.c */
int ndst_add(struct ndst_net *nn, u32 n, const char *tmpl);
int ndst_del(struct ndst_net *nn, u32 start, u32 stop, bool batch);
void ndst_del_all(struct net *net);
void ndst_result_free(struct ndst_net *nn);

/* hold.c */
int ndst_hold_init(void);
void ndst_hold_close(void);
void ndst_hold_exit(void);
int ndst_hold(struct net *net, int ifindex, u32 ms);
int ndst_unhold(struct net *net, int ifindex);
void ndst_unhold_net(struct net *net);
ssize_t ndst_hold_show(struct net *net, char *buf, size_t size);

/* sysctl.c */
int ndst_sysctl_register(struct ndst_net *nn);
void ndst_sysctl_unregister(struct ndst_net *nn);

/* main.c */
struct ndst_net *ndst_net(struct net *net);

#endif /* NDST_H */
