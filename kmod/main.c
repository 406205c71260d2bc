// SPDX-License-Identifier: GPL-2.0
/*
 * ndst.ko: the test module of the 2009 netdev teardown experiment, rebuilt
 * from its interface ("echo 1000 > /proc/sys/net/ndst/add",
 * "echo 1 1000 > /proc/sys/net/ndst/del") and the kernel's documented
 * networking APIs.
 *
 * This file holds the per-namespace state and the module's life:
 *   load:   the hold workqueue, the link kind "ndst", then the per-namespace
 *           part (its init runs for every existing and future namespace and
 *           registers that namespace's /proc/sys/net/ndst).
 *   a namespace goes: its files are unregistered (which waits for writers
 *           in progress), its holds released, its devices unregistered.
 *   unload: every hold is released first (and new ones refused), so that a
 *           del waiting for a hold finishes; then every namespace's part goes
 *           as above; then the link kind; then the workqueue is drained.
 */
#include <linux/init.h>
#include <linux/module.h>
#include <net/netns/generic.h>

#include "ndst.h"

static unsigned int ndst_net_id __read_mostly;

struct ndst_net *ndst_net(struct net *net)
{
	return net_generic(net, ndst_net_id);
}

static int __net_init ndst_net_init(struct net *net)
{
	struct ndst_net *nn = ndst_net(net);

	nn->net = net;
	mutex_init(&nn->op_lock);
	mutex_init(&nn->res_lock);
	return ndst_sysctl_register(nn);
}

static void __net_exit ndst_net_exit(struct net *net)
{
	struct ndst_net *nn = ndst_net(net);

	ndst_unhold_net(net);
	ndst_sysctl_unregister(nn);
	ndst_del_all(net);
	ndst_result_free(nn);
}

/*
 * A device part: its exit runs before the kernel's own device cleanup of a
 * dying namespace, so the module unregisters its devices itself.
 */
static struct pernet_operations ndst_net_ops = {
	.init = ndst_net_init,
	.exit = ndst_net_exit,
	.id = &ndst_net_id,
	.size = sizeof(struct ndst_net),
};

static int __init ndst_init(void)
{
	int err;

	err = ndst_hold_init();
	if (err)
		return err;
	err = ndst_dev_init();
	if (err)
		goto out_hold;
	err = register_pernet_device(&ndst_net_ops);
	if (err)
		goto out_dev;
	pr_info("ndst: loaded; /proc/sys/net/ndst: add, del, del_batch, hold, last, samples, devices\n");
	return 0;
out_dev:
	ndst_dev_exit();
out_hold:
	ndst_hold_exit();
	return err;
}

static void __exit ndst_exit(void)
{
	ndst_hold_close();
	unregister_pernet_device(&ndst_net_ops);
	ndst_dev_exit();
	ndst_hold_exit();
	pr_info("ndst: unloaded\n");
}

module_init(ndst_init);
module_exit(ndst_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Timed registration and unregistration of test network devices (/proc/sys/net/ndst)");
MODULE_AUTHOR("The ndst authors");
