// SPDX-License-Identifier: GPL-2.0
/*
 * The module's own device type.
 *
 * A module cannot borrow the dummy driver's device operations (dummy.ko
 * exports none), so whether or not the kernel has "dummy", the devices this
 * module creates are of its own type: dummy-like Ethernet devices with no
 * queue and no ARP that drop every packet they are given. They carry the
 * link kind "ndst" (ip -d link shows it), through link operations that have
 * neither setup nor dellink: rtnetlink can therefore neither create nor
 * delete them ("ip link add type ndst" and "ip link del" fail with
 * EOPNOTSUPP), and they cannot change namespace (netns-local). Only this
 * module registers and unregisters them.
 *
 * Ownership is a property of the device itself: a device belongs to the
 * module exactly when its netdev_ops are the module's (ndst_owns). No list
 * of the module's devices is kept that could drift from the kernel's own.
 */
#include <linux/atomic.h>
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/string.h>
#include <net/rtnetlink.h>

#include "ndst.h"

struct ndst_priv {
	atomic64_t tx_dropped;
};

static netdev_tx_t ndst_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct ndst_priv *p = netdev_priv(dev);

	atomic64_inc(&p->tx_dropped);
	dev_kfree_skb(skb);
	return NETDEV_TX_OK;
}

static void ndst_get_stats64(struct net_device *dev,
			     struct rtnl_link_stats64 *stats)
{
	struct ndst_priv *p = netdev_priv(dev);

	stats->tx_dropped = atomic64_read(&p->tx_dropped);
}

static const struct net_device_ops ndst_netdev_ops = {
	.ndo_start_xmit = ndst_xmit,
	.ndo_get_stats64 = ndst_get_stats64,
	.ndo_set_mac_address = eth_mac_addr,
	.ndo_validate_addr = eth_validate_addr,
};

/* Only .kind: see the comment at the top of this file. */
static struct rtnl_link_ops ndst_link_ops = {
	.kind = "ndst",
};

static void ndst_setup(struct net_device *dev)
{
	struct ndst_priv *p = netdev_priv(dev);

	ether_setup(dev);
	dev->netdev_ops = &ndst_netdev_ops;
	/* The kernel frees the device itself once its last reference is gone. */
	dev->needs_free_netdev = true;
	dev->flags |= IFF_NOARP;
	dev->flags &= ~IFF_MULTICAST;
	dev->priv_flags |= IFF_LIVE_ADDR_CHANGE | IFF_NO_QUEUE;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
	dev->netns_local = true;
#else
	dev->features |= NETIF_F_NETNS_LOCAL;
#endif
	dev->min_mtu = 0;
	dev->max_mtu = 0;
	eth_hw_addr_random(dev);
	atomic64_set(&p->tx_dropped, 0);
}

bool ndst_owns(const struct net_device *dev)
{
	return dev->netdev_ops == &ndst_netdev_ops;
}

/*
 * ndst_valid_template reports whether tmpl can name devices: shorter than
 * IFNAMSIZ, a valid device name, with exactly one '%' and that one "%d".
 */
bool ndst_valid_template(const char *tmpl)
{
	const char *pct = strchr(tmpl, '%');

	if (strnlen(tmpl, IFNAMSIZ) >= IFNAMSIZ || !dev_valid_name(tmpl))
		return false;
	return pct && pct[1] == 'd' && !strchr(pct + 1, '%');
}

/*
 * ndst_dev_alloc allocates one device of the module's type in net, to be
 * named from tmpl when it is registered. The caller registers it, or frees
 * it with free_netdev.
 */
struct net_device *ndst_dev_alloc(struct net *net, const char *tmpl)
{
	struct net_device *dev;

	dev = alloc_netdev(sizeof(struct ndst_priv), tmpl, NET_NAME_ENUM,
			   ndst_setup);
	if (!dev)
		return NULL;
	dev_net_set(dev, net);
	dev->rtnl_link_ops = &ndst_link_ops;
	return dev;
}

int ndst_dev_init(void)
{
	return rtnl_link_register(&ndst_link_ops);
}

/* Called only once no device of the module's type is left anywhere. */
void ndst_dev_exit(void)
{
	rtnl_link_unregister(&ndst_link_ops);
}
