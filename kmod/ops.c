// SPDX-License-Identifier: GPL-2.0
/*
 * add and del: registering and unregistering the module's devices, timed
 * with ktime in the kernel.
 *
 * add registers each device in its own RTNL section (rtnl_lock,
 * register_netdevice, rtnl_unlock), as N "ip link add" would, so other RTNL
 * users are not locked out for the whole run. Its per-device time runs from
 * the allocation to the end of rtnl_unlock.
 *
 * del unregisters the module's devices in an ifindex range one by one, in
 * ascending ifindex order, like the 2009 module: for each device,
 * rtnl_lock, unregister_netdevice, rtnl_unlock. rtnl_unlock runs the
 * kernel's unregister "todo" work, which waits for RCU grace periods and
 * for every reference to the device to go (netdev_wait_allrefs), so each
 * per-device time includes those waits.
 *
 * del_batch unregisters the whole range in one RTNL section with one
 * unregister_netdevice_many, the batched teardown the kernel gained after
 * 2009; it has one duration and no per-device times.
 *
 * Devices in a range that the module did not create are never touched;
 * they are counted as skipped. A range with no device of the module's
 * fails with -ENODEV and changes nothing. Only a fatal signal stops a long
 * run early (-EINTR), after the device in progress; the result then counts
 * what was done.
 */
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/rtnetlink.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "ndst.h"

/* ndst_publish makes r the namespace's last result; it takes r's samples. */
static void ndst_publish(struct ndst_net *nn, struct ndst_result *r)
{
	struct ndst_result *kind;

	mutex_lock(&nn->res_lock);
	r->seq = ++nn->seq;
	kvfree(nn->last.samples);
	nn->last = *r;
	if (!strcmp(r->op, "add"))
		kind = &nn->last_add;
	else if (!strcmp(r->op, "del"))
		kind = &nn->last_del;
	else
		kind = &nn->last_del_batch;
	*kind = *r;
	kind->samples = NULL;
	kind->nsamples = 0;
	mutex_unlock(&nn->res_lock);
}

void ndst_result_free(struct ndst_net *nn)
{
	mutex_lock(&nn->res_lock);
	kvfree(nn->last.samples);
	nn->last.samples = NULL;
	nn->last.nsamples = 0;
	mutex_unlock(&nn->res_lock);
}

int ndst_add(struct ndst_net *nn, u32 n, const char *tmpl)
{
	struct ndst_result r = { .op = "add" };
	struct net_device *dev;
	u64 t0, t;
	int err = 0;

	r.samples = kvcalloc(n, sizeof(*r.samples), GFP_KERNEL);
	if (!r.samples)
		return -ENOMEM;
	t0 = ktime_get_ns();
	while (r.count < n) {
		if (fatal_signal_pending(current)) {
			err = -EINTR;
			break;
		}
		t = ktime_get_ns();
		dev = ndst_dev_alloc(nn->net, tmpl);
		if (!dev) {
			err = -ENOMEM;
			break;
		}
		rtnl_lock();
		err = register_netdevice(dev);
		rtnl_unlock();
		if (err) {
			free_netdev(dev);
			break;
		}
		r.samples[r.count++] = ktime_get_ns() - t;
	}
	r.ns = ktime_get_ns() - t0;
	r.nsamples = r.count;
	r.err = err;
	ndst_publish(nn, &r);
	return err;
}

static bool ndst_in_range(const struct net_device *dev, u32 start, u32 stop)
{
	return dev->ifindex >= 0 && (u32)dev->ifindex >= start &&
	       (u32)dev->ifindex <= stop;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

/*
 * ndst_collect returns the ifindexes of the module's devices in
 * [start, stop], sorted, in *ids (kvfree it), their number in *n and the
 * number of other devices in the range in *skipped. The caller holds
 * op_lock, so no device of the module's appears or goes meanwhile.
 */
static int ndst_collect(struct net *net, u32 start, u32 stop, int **ids,
			u32 *n, u32 *skipped)
{
	struct net_device *dev;
	u32 own = 0, k = 0;

	*skipped = 0;
	rtnl_lock();
	for_each_netdev(net, dev) {
		if (!ndst_in_range(dev, start, stop))
			continue;
		if (ndst_owns(dev))
			own++;
		else
			(*skipped)++;
	}
	rtnl_unlock();
	*n = 0;
	*ids = NULL;
	if (!own)
		return 0;
	*ids = kvmalloc_array(own, sizeof(**ids), GFP_KERNEL);
	if (!*ids)
		return -ENOMEM;
	rtnl_lock();
	for_each_netdev(net, dev) {
		if (k < own && ndst_in_range(dev, start, stop) && ndst_owns(dev))
			(*ids)[k++] = dev->ifindex;
	}
	rtnl_unlock();
	sort(*ids, k, sizeof(**ids), cmp_int, NULL);
	*n = k;
	return 0;
}

static int ndst_del_one_by_one(struct ndst_net *nn, u32 start, u32 stop)
{
	struct ndst_result r = { .op = "del" };
	struct net_device *dev;
	bool gone;
	int *ids, err;
	u32 n, i;
	u64 t0, t;

	t0 = ktime_get_ns();
	err = ndst_collect(nn->net, start, stop, &ids, &n, &r.skipped);
	if (err)
		return err;
	if (!n)
		return -ENODEV;
	r.samples = kvcalloc(n, sizeof(*r.samples), GFP_KERNEL);
	if (!r.samples) {
		kvfree(ids);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (fatal_signal_pending(current)) {
			err = -EINTR;
			break;
		}
		t = ktime_get_ns();
		gone = false;
		rtnl_lock();
		dev = __dev_get_by_index(nn->net, ids[i]);
		if (dev && ndst_owns(dev)) {
			unregister_netdevice(dev);
			gone = true;
		}
		rtnl_unlock();
		if (gone)
			r.samples[r.count++] = ktime_get_ns() - t;
	}
	kvfree(ids);
	r.ns = ktime_get_ns() - t0;
	r.nsamples = r.count;
	r.err = err;
	ndst_publish(nn, &r);
	return err;
}

static int ndst_del_batch(struct ndst_net *nn, u32 start, u32 stop)
{
	struct ndst_result r = { .op = "del_batch" };
	struct net_device *dev;
	LIST_HEAD(kill);
	u64 t0;

	t0 = ktime_get_ns();
	rtnl_lock();
	for_each_netdev(nn->net, dev) {
		if (!ndst_in_range(dev, start, stop))
			continue;
		if (!ndst_owns(dev)) {
			r.skipped++;
			continue;
		}
		unregister_netdevice_queue(dev, &kill);
		r.count++;
	}
	if (r.count)
		unregister_netdevice_many(&kill);
	rtnl_unlock();
	if (!r.count)
		return -ENODEV;
	r.ns = ktime_get_ns() - t0;
	ndst_publish(nn, &r);
	return 0;
}

int ndst_del(struct ndst_net *nn, u32 start, u32 stop, bool batch)
{
	return batch ? ndst_del_batch(nn, start, stop) :
		       ndst_del_one_by_one(nn, start, stop);
}

/* ndst_del_all unregisters every device of the module's in net, in one batch. */
void ndst_del_all(struct net *net)
{
	struct net_device *dev;
	LIST_HEAD(kill);

	rtnl_lock();
	for_each_netdev(net, dev) {
		if (ndst_owns(dev))
			unregister_netdevice_queue(dev, &kill);
	}
	unregister_netdevice_many(&kill);
	rtnl_unlock();
}
