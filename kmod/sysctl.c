// SPDX-License-Identifier: GPL-2.0
/*
 * The files of /proc/sys/net/ndst, one set per network namespace; a write
 * acts on the namespace the file belongs to (that of the process that
 * opened it).
 *
 *   add        write "N" or "N TEMPLATE": create N devices (1..32768) named
 *              from TEMPLATE (one %d; default "ndst%d").
 *              read: "COUNT NS" of the last add.
 *   del        write "START STOP": unregister the module's devices with
 *              START <= ifindex <= STOP one by one (1 <= START <= STOP).
 *              read: "COUNT NS" of the last del.
 *   del_batch  the same range, unregistered in one batch.
 *              read: "COUNT NS" of the last del_batch.
 *   hold       write "IFINDEX MS": hold a reference on that device for MS
 *              milliseconds (1..600000); "IFINDEX 0" releases it now.
 *              read: "IFINDEX NAME MS_LEFT" per hold.
 *   last       read: "seq=S op=OP count=C skipped=K ns=NS err=E" of the most
 *              recent add, del or del_batch ("seq=0 op=none" before any).
 *   samples    read: that operation's per-device durations in ns, one per
 *              line, in the order the devices were handled (none for
 *              del_batch).
 *   devices    read: "IFINDEX NAME REFCOUNT" per device of the module's.
 *
 * A write that does not parse (not decimal, out of range, a reversed range,
 * extra words, more than one line, an offset write) fails with -EINVAL and
 * changes nothing. A range with none of the module's devices fails with
 * -ENODEV, as does a hold on a device the module did not create; releasing
 * a device that is not held fails with -ENOENT. Writes need CAP_NET_ADMIN in
 * the namespace's user namespace. Writers of add, del and del_batch run one
 * at a time (a mutex per namespace); hold writes do not wait for them, so a
 * hold can be released while a del waits for it.
 */
#include <linux/capability.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysctl.h>

#include "ndst.h"

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define NDST_CTL const struct ctl_table
#else
#define NDST_CTL struct ctl_table
#endif

#define NDST_DEFAULT_TEMPLATE "ndst%d"
#define NDST_MAX_WORDS 3

/*
 * ndst_words splits a write into at most max words, copied into line; it
 * fails unless the write starts at offset 0, is shorter than NDST_MAX_WRITE,
 * holds one line (a final newline is allowed) and has min..max words.
 */
static int ndst_words(const void *buffer, size_t len, loff_t pos, char *line,
		      char **w, int min, int max)
{
	char *p, *tok;
	int n = 0;

	if (pos != 0 || len == 0 || len >= NDST_MAX_WRITE)
		return -EINVAL;
	memcpy(line, buffer, len);
	line[len] = '\0';
	if (len > 1 && line[len - 1] == '\n')
		line[len - 1] = '\0';
	if (strchr(line, '\n') || strnlen(line, len) != strlen(line))
		return -EINVAL;
	p = line;
	while ((tok = strsep(&p, " \t")) != NULL) {
		if (!*tok)
			continue;
		if (n == max)
			return -EINVAL;
		w[n++] = tok;
	}
	return n < min ? -EINVAL : n;
}

/* ndst_u32 parses a decimal in [lo, hi]; anything else is -EINVAL. */
static int ndst_u32(const char *s, u32 lo, u32 hi, u32 *v)
{
	if (!(*s >= '0' && *s <= '9'))
		return -EINVAL; /* no sign, no blank */
	if (kstrtou32(s, 10, v) || *v < lo || *v > hi)
		return -EINVAL;
	return 0;
}

/* ndst_out copies text[*ppos:] into a read's buffer. */
static int ndst_out(const char *text, size_t tlen, void *buffer, size_t *lenp,
		    loff_t *ppos)
{
	size_t n;

	if (*ppos < 0 || (size_t)*ppos >= tlen) {
		*lenp = 0;
		return 0;
	}
	n = min(tlen - (size_t)*ppos, *lenp);
	memcpy(buffer, text + *ppos, n);
	*lenp = n;
	*ppos += n;
	return 0;
}

static int ndst_may_write(struct ndst_net *nn)
{
	return ns_capable(nn->net->user_ns, CAP_NET_ADMIN) ? 0 : -EPERM;
}

static int ndst_done(int err, size_t *lenp, loff_t *ppos)
{
	if (err)
		return err;
	*ppos += *lenp;
	return 0;
}

/* Read-back of a per-kind result: "COUNT NS". */
static int ndst_show_result(struct ndst_net *nn, const struct ndst_result *r,
			    void *buffer, size_t *lenp, loff_t *ppos)
{
	char text[48];
	int len;

	mutex_lock(&nn->res_lock);
	len = scnprintf(text, sizeof(text), "%u %llu\n", r->count, r->ns);
	mutex_unlock(&nn->res_lock);
	return ndst_out(text, len, buffer, lenp, ppos);
}

static int ndst_add_handler(NDST_CTL *t, int write, void *buffer, size_t *lenp,
			    loff_t *ppos)
{
	struct ndst_net *nn = t->data;
	char line[NDST_MAX_WRITE], *w[NDST_MAX_WORDS];
	const char *tmpl = NDST_DEFAULT_TEMPLATE;
	int n, err;
	u32 count;

	if (!write)
		return ndst_show_result(nn, &nn->last_add, buffer, lenp, ppos);
	err = ndst_may_write(nn);
	if (err)
		return err;
	n = ndst_words(buffer, *lenp, *ppos, line, w, 1, 2);
	if (n < 0)
		return n;
	if (ndst_u32(w[0], 1, NDST_MAX_ADD, &count))
		return -EINVAL;
	if (n == 2) {
		if (!ndst_valid_template(w[1]))
			return -EINVAL;
		tmpl = w[1];
	}
	if (mutex_lock_killable(&nn->op_lock))
		return -EINTR;
	err = ndst_add(nn, count, tmpl);
	mutex_unlock(&nn->op_lock);
	return ndst_done(err, lenp, ppos);
}

static int ndst_del_write(struct ndst_net *nn, bool batch, void *buffer,
			  size_t *lenp, loff_t *ppos)
{
	char line[NDST_MAX_WRITE], *w[NDST_MAX_WORDS];
	u32 start, stop;
	int n, err;

	err = ndst_may_write(nn);
	if (err)
		return err;
	n = ndst_words(buffer, *lenp, *ppos, line, w, 2, 2);
	if (n < 0)
		return n;
	if (ndst_u32(w[0], 1, INT_MAX, &start) ||
	    ndst_u32(w[1], 1, INT_MAX, &stop) || start > stop)
		return -EINVAL;
	if (mutex_lock_killable(&nn->op_lock))
		return -EINTR;
	err = ndst_del(nn, start, stop, batch);
	mutex_unlock(&nn->op_lock);
	return ndst_done(err, lenp, ppos);
}

static int ndst_del_handler(NDST_CTL *t, int write, void *buffer, size_t *lenp,
			    loff_t *ppos)
{
	struct ndst_net *nn = t->data;

	if (!write)
		return ndst_show_result(nn, &nn->last_del, buffer, lenp, ppos);
	return ndst_del_write(nn, false, buffer, lenp, ppos);
}

static int ndst_del_batch_handler(NDST_CTL *t, int write, void *buffer,
				  size_t *lenp, loff_t *ppos)
{
	struct ndst_net *nn = t->data;

	if (!write)
		return ndst_show_result(nn, &nn->last_del_batch, buffer, lenp,
					ppos);
	return ndst_del_write(nn, true, buffer, lenp, ppos);
}

static int ndst_hold_handler(NDST_CTL *t, int write, void *buffer,
			     size_t *lenp, loff_t *ppos)
{
	struct ndst_net *nn = t->data;
	char line[NDST_MAX_WRITE], *w[NDST_MAX_WORDS];
	u32 ifindex, ms;
	size_t size;
	ssize_t len;
	char *text;
	int n, err;

	if (!write) {
		size = NDST_MAX_HOLDS * (12 + IFNAMSIZ + 12);
		text = kvmalloc(size, GFP_KERNEL);
		if (!text)
			return -ENOMEM;
		len = ndst_hold_show(nn->net, text, size);
		err = ndst_out(text, len, buffer, lenp, ppos);
		kvfree(text);
		return err;
	}
	err = ndst_may_write(nn);
	if (err)
		return err;
	n = ndst_words(buffer, *lenp, *ppos, line, w, 2, 2);
	if (n < 0)
		return n;
	if (ndst_u32(w[0], 1, INT_MAX, &ifindex) ||
	    ndst_u32(w[1], 0, NDST_MAX_HOLD_MS, &ms))
		return -EINVAL;
	if (ms == 0)
		err = ndst_unhold(nn->net, ifindex);
	else
		err = ndst_hold(nn->net, ifindex, ms);
	return ndst_done(err, lenp, ppos);
}

static int ndst_last_handler(NDST_CTL *t, int write, void *buffer,
			     size_t *lenp, loff_t *ppos)
{
	struct ndst_net *nn = t->data;
	const struct ndst_result *r = &nn->last;
	char text[160];
	int len;

	if (write)
		return -EPERM;
	mutex_lock(&nn->res_lock);
	if (!r->op)
		len = scnprintf(text, sizeof(text), "seq=0 op=none\n");
	else
		len = scnprintf(text, sizeof(text),
				"seq=%llu op=%s count=%u skipped=%u ns=%llu err=%d\n",
				r->seq, r->op, r->count, r->skipped, r->ns,
				r->err);
	mutex_unlock(&nn->res_lock);
	return ndst_out(text, len, buffer, lenp, ppos);
}

static int ndst_samples_handler(NDST_CTL *t, int write, void *buffer,
				size_t *lenp, loff_t *ppos)
{
	struct ndst_net *nn = t->data;
	size_t size, len = 0;
	char *text;
	u32 i;
	int err;

	if (write)
		return -EPERM;
	mutex_lock(&nn->res_lock);
	size = (size_t)nn->last.nsamples * 21 + 1;
	text = kvmalloc(size, GFP_KERNEL);
	if (!text) {
		mutex_unlock(&nn->res_lock);
		return -ENOMEM;
	}
	for (i = 0; i < nn->last.nsamples; i++)
		len += scnprintf(text + len, size - len, "%llu\n",
				 nn->last.samples[i]);
	mutex_unlock(&nn->res_lock);
	err = ndst_out(text, len, buffer, lenp, ppos);
	kvfree(text);
	return err;
}

/* "IFINDEX NAME REFCOUNT" per device of the module's, in list order. */
static int ndst_devices_handler(NDST_CTL *t, int write, void *buffer,
				size_t *lenp, loff_t *ppos)
{
	struct ndst_net *nn = t->data;
	const size_t line = 12 + IFNAMSIZ + 12;
	struct net_device *dev;
	size_t size, len;
	u32 n = 0;
	char *text;
	int err;

	if (write)
		return -EPERM;
	rcu_read_lock();
	for_each_netdev_rcu(nn->net, dev) {
		if (ndst_owns(dev))
			n++;
	}
	rcu_read_unlock();
	/* Room for devices added meanwhile; more are left out of this read. */
	size = ((size_t)n + 64) * line;
	text = kvmalloc(size, GFP_KERNEL);
	if (!text)
		return -ENOMEM;
	len = 0;
	rcu_read_lock();
	for_each_netdev_rcu(nn->net, dev) {
		if (!ndst_owns(dev) || size - len < line)
			continue;
		len += scnprintf(text + len, size - len, "%d %s %d\n",
				 dev->ifindex, dev->name,
				 netdev_refcnt_read(dev));
	}
	rcu_read_unlock();
	err = ndst_out(text, len, buffer, lenp, ppos);
	kvfree(text);
	return err;
}

static struct ctl_table ndst_table[] = {
	{ .procname = "add", .mode = 0644, .proc_handler = ndst_add_handler },
	{ .procname = "del", .mode = 0644, .proc_handler = ndst_del_handler },
	{ .procname = "del_batch", .mode = 0644,
	  .proc_handler = ndst_del_batch_handler },
	{ .procname = "hold", .mode = 0644, .proc_handler = ndst_hold_handler },
	{ .procname = "last", .mode = 0444, .proc_handler = ndst_last_handler },
	{ .procname = "samples", .mode = 0444,
	  .proc_handler = ndst_samples_handler },
	{ .procname = "devices", .mode = 0444,
	  .proc_handler = ndst_devices_handler },
	{ }
};

int ndst_sysctl_register(struct ndst_net *nn)
{
	size_t i, n = ARRAY_SIZE(ndst_table) - 1;

	nn->table = kmemdup(ndst_table, sizeof(ndst_table), GFP_KERNEL);
	if (!nn->table)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		nn->table[i].data = nn;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 6, 0)
	nn->sysctl = register_net_sysctl_sz(nn->net, "net/ndst", nn->table, n);
#else
	nn->sysctl = register_net_sysctl(nn->net, "net/ndst", nn->table);
#endif
	if (!nn->sysctl) {
		kfree(nn->table);
		nn->table = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Waits for every handler in progress to return. */
void ndst_sysctl_unregister(struct ndst_net *nn)
{
	if (nn->sysctl)
		unregister_net_sysctl_table(nn->sysctl);
	kfree(nn->table);
	nn->sysctl = NULL;
	nn->table = NULL;
}
