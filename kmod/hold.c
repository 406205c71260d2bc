// SPDX-License-Identifier: GPL-2.0
/*
 * hold: one extra, tracked reference (netdev_hold) on one of the module's
 * devices, released by a timer after a given time, by an explicit release,
 * or when the device's namespace or the module goes away.
 *
 * While the reference is held, unregistering the device cannot finish: the
 * writer of del (or del_batch) waits in the kernel's netdev_wait_allrefs,
 * which every net.core.netdev_unregister_timeout_secs (10 s by default)
 * prints "unregister_netdevice: waiting for NAME to become free. Usage
 * count = N". That is the point of the knob: a genuine held reference,
 * bounded in time (NDST_MAX_HOLD_MS at most).
 *
 * Locking: ndst_holds_lock guards the list of holds and each net's
 * closing flag. Whoever takes a hold off the list owns it: the timer's work
 * function when it runs first; otherwise the releaser, which then cancels
 * the work (waiting for it if it is running, in which case it finds the hold
 * gone and returns) before dropping the reference. The work runs on the
 * module's own workqueue, which module unload drains and destroys, so no
 * work function can be running once the module's code is gone.
 *
 * A device that is held once cannot be held again until released (-EBUSY):
 * a hold is never re-armed, which keeps the ownership rule above simple.
 */
#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "ndst.h"

struct ndst_hold {
	struct list_head node;	/* on ndst_holds while the hold is live */
	struct list_head reap;	/* on a releaser's private list */
	struct net_device *dev;
	netdevice_tracker tracker;
	struct delayed_work work;
	struct net *net;
	int ifindex;
	unsigned long until;	/* jiffies */
};

static LIST_HEAD(ndst_holds);
static DEFINE_SPINLOCK(ndst_holds_lock);
static unsigned int ndst_nholds;
static bool ndst_holds_closed;	/* module unload has begun */
static struct workqueue_struct *ndst_wq;

/* Called with ndst_holds_lock held. */
static struct ndst_hold *ndst_find(struct net *net, int ifindex)
{
	struct ndst_hold *h;

	list_for_each_entry(h, &ndst_holds, node) {
		if (h->net == net && h->ifindex == ifindex)
			return h;
	}
	return NULL;
}

/* Called with ndst_holds_lock held: take h off the list; the caller owns it. */
static void ndst_take(struct ndst_hold *h)
{
	list_del_init(&h->node);
	ndst_nholds--;
}

static void ndst_put(struct ndst_hold *h)
{
	netdev_put(h->dev, &h->tracker);
	kfree(h);
}

static void ndst_expire(struct work_struct *work)
{
	struct ndst_hold *h = container_of(to_delayed_work(work),
					   struct ndst_hold, work);

	spin_lock(&ndst_holds_lock);
	if (list_empty(&h->node)) {
		/* A releaser owns it and is waiting for this function to end. */
		spin_unlock(&ndst_holds_lock);
		return;
	}
	ndst_take(h);
	spin_unlock(&ndst_holds_lock);
	ndst_put(h);
}

/* Release holds the caller has taken off the list, linked through reap. */
static void ndst_release(struct list_head *reap)
{
	struct ndst_hold *h, *tmp;

	list_for_each_entry_safe(h, tmp, reap, reap) {
		list_del(&h->reap);
		cancel_delayed_work_sync(&h->work);
		ndst_put(h);
	}
}

int ndst_hold(struct net *net, int ifindex, u32 ms)
{
	struct ndst_net *nn = ndst_net(net);
	struct net_device *dev;
	struct ndst_hold *h;
	int err = 0;

	dev = dev_get_by_index(net, ifindex);
	if (!dev)
		return -ENODEV;
	if (!ndst_owns(dev)) {
		dev_put(dev);
		return -ENODEV;
	}
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h) {
		dev_put(dev);
		return -ENOMEM;
	}
	/* The lookup's reference becomes the hold's, tracked. */
	netdev_tracker_alloc(dev, &h->tracker, GFP_KERNEL);
	h->dev = dev;
	h->net = net;
	h->ifindex = ifindex;
	INIT_LIST_HEAD(&h->node);
	INIT_LIST_HEAD(&h->reap);
	INIT_DELAYED_WORK(&h->work, ndst_expire);

	spin_lock(&ndst_holds_lock);
	if (ndst_holds_closed || nn->closing)
		err = -ENODEV;
	else if (ndst_find(net, ifindex))
		err = -EBUSY;
	else if (ndst_nholds >= NDST_MAX_HOLDS)
		err = -ENOSPC;
	if (!err) {
		h->until = jiffies + msecs_to_jiffies(ms);
		list_add_tail(&h->node, &ndst_holds);
		ndst_nholds++;
		queue_delayed_work(ndst_wq, &h->work, msecs_to_jiffies(ms));
	}
	spin_unlock(&ndst_holds_lock);
	if (err)
		ndst_put(h);
	return err;
}

int ndst_unhold(struct net *net, int ifindex)
{
	struct ndst_hold *h;
	LIST_HEAD(reap);

	spin_lock(&ndst_holds_lock);
	h = ndst_find(net, ifindex);
	if (h) {
		ndst_take(h);
		list_add(&h->reap, &reap);
	}
	spin_unlock(&ndst_holds_lock);
	if (!h)
		return -ENOENT;
	ndst_release(&reap);
	return 0;
}

/*
 * ndst_unhold_net releases every hold in net (or in every namespace when net
 * is NULL, for module unload) and refuses new ones there from now on.
 */
static void ndst_unhold_matching(struct net *net)
{
	struct ndst_hold *h, *tmp;
	LIST_HEAD(reap);

	spin_lock(&ndst_holds_lock);
	if (net)
		ndst_net(net)->closing = true;
	else
		ndst_holds_closed = true;
	list_for_each_entry_safe(h, tmp, &ndst_holds, node) {
		if (net && h->net != net)
			continue;
		ndst_take(h);
		list_add_tail(&h->reap, &reap);
	}
	spin_unlock(&ndst_holds_lock);
	ndst_release(&reap);
}

void ndst_unhold_net(struct net *net)
{
	ndst_unhold_matching(net);
}

/*
 * ndst_hold_show writes "IFINDEX NAME MS_LEFT" lines, one per hold in net,
 * into buf and returns their length.
 */
ssize_t ndst_hold_show(struct net *net, char *buf, size_t size)
{
	struct ndst_hold *h;
	size_t len = 0;
	long left;

	spin_lock(&ndst_holds_lock);
	list_for_each_entry(h, &ndst_holds, node) {
		if (h->net != net)
			continue;
		left = (long)(h->until - jiffies);
		if (left < 0)
			left = 0;
		len += scnprintf(buf + len, size - len, "%d %s %u\n",
				 h->ifindex, h->dev->name,
				 jiffies_to_msecs(left));
	}
	spin_unlock(&ndst_holds_lock);
	return len;
}

int ndst_hold_init(void)
{
	ndst_wq = alloc_workqueue("ndst_hold", 0, 0);
	return ndst_wq ? 0 : -ENOMEM;
}

/* Module unload, first step: release every hold, refuse new ones. */
void ndst_hold_close(void)
{
	ndst_unhold_matching(NULL);
}

/* Module unload, last step: no work function may run after this. */
void ndst_hold_exit(void)
{
	destroy_workqueue(ndst_wq);
}
