// SPDX-License-Identifier: GPL-2.0
/*
 * Listening for the modules of peer hosts, per network namespace.
 *
 * A namespace gets a TCP listener and an rdma_cm listener on the module
 * parameter port (all addresses, IPv4 and IPv6; rdma_cm's port space is its
 * own) the first time a communicator that spans hosts is created in it (the
 * initial namespace at load), and loses them with the namespace (pernet
 * exit) or the module.  An accept thread hands each new connection to the workqueue,
 * where the handshake runs with a bounded wait (coll_tcp_accepted()); at
 * most COLL_NET_MAX_PENDING handshakes are in progress per namespace, so a
 * flood of idle connections cannot pile up work.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in6.h>
#include <linux/kthread.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/sock.h>
#include <rdma/rdma_cm.h>

#include "coll_loc.h"

#define COLL_NET_MAX_PENDING	64

struct coll_net {
	struct mutex lock;		/* sock, thread, rcm */
	struct net *net;		/* not a reference: pernet lifetime */
	struct socket *sock;
	struct task_struct *thread;
	struct rdma_cm_id *rcm;		/* NULL: no RDMA listener here */
	atomic_t pending;
	u16 port;
};

static unsigned int coll_net_id __read_mostly;

struct coll_net_accept {
	struct work_struct work;
	struct coll_net *cn;
	struct socket *sock;
};

static void coll_net_accept_work(struct work_struct *work)
{
	struct coll_net_accept *a = container_of(work, struct coll_net_accept,
						 work);
	struct coll_net *cn = a->cn;

	coll_tcp_accepted(cn->net, a->sock);
	atomic_dec(&cn->pending);
	kfree(a);
}

static int coll_net_accept_thread(void *arg)
{
	struct coll_net *cn = arg;
	struct coll_net_accept *a;
	struct socket *newsock;
	int r;

	while (!kthread_should_stop()) {
		r = kernel_accept(cn->sock, &newsock, 0);
		if (r) {
			if (r == -EAGAIN || r == -EINTR)
				continue;
			/* shut down, or out of resources: breathe */
			if (!kthread_should_stop())
				msleep(100);
			continue;
		}
		a = kzalloc(sizeof(*a), GFP_KERNEL);
		if (!a || atomic_inc_return(&cn->pending) > COLL_NET_MAX_PENDING) {
			if (a)
				atomic_dec(&cn->pending);
			kfree(a);
			sock_release(newsock);
			continue;
		}
		INIT_WORK(&a->work, coll_net_accept_work);
		a->cn = cn;
		a->sock = newsock;
		queue_work(coll_wq, &a->work);
	}
	return 0;
}

/* Connect requests on the RDMA listener (rdma_cm's handler context). */
static int coll_net_rdma_event(struct rdma_cm_id *cm, struct rdma_cm_event *ev)
{
	struct coll_net *cn = cm->context;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return coll_rdma_request(cm, ev, cn->net);
	return 0;
}

/*
 * Locks: cn->lock.  An rdma_cm listener, if this kernel and net allow.
 * Never under coll_comms_lock (see coll_comm_init()): a failed one is
 * destroyed here, which takes rdma_cm's handler mutex.
 */
static void coll_net_rdma_listen(struct coll_net *cn, u16 port)
{
	struct sockaddr_in6 sin6 = {
		.sin6_family = AF_INET6,
		.sin6_port = htons(port),
	};
	struct rdma_cm_id *cm;

	lockdep_assert_held(&cn->lock);
	cm = rdma_create_id(cn->net, coll_net_rdma_event, cn, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(cm))
		return;
	if (rdma_bind_addr(cm, (struct sockaddr *)&sin6) ||
	    rdma_listen(cm, 128)) {
		rdma_destroy_id(cm);
		return;
	}
	cn->rcm = cm;
}

static void coll_net_stop(struct coll_net *cn)
{
	struct rdma_cm_id *rcm;

	/*
	 * The rdma_cm listener goes outside cn->lock: its destruction waits
	 * for its handler (coll_rdma_request()), which takes locks of ours.
	 */
	mutex_lock(&cn->lock);
	rcm = cn->rcm;
	cn->rcm = NULL;
	mutex_unlock(&cn->lock);
	if (rcm)
		rdma_destroy_id(rcm);

	mutex_lock(&cn->lock);
	if (cn->sock) {
		kernel_sock_shutdown(cn->sock, SHUT_RDWR);
		kthread_stop(cn->thread);
		sock_release(cn->sock);
		cn->sock = NULL;
		cn->thread = NULL;
	}
	mutex_unlock(&cn->lock);
	/* handshakes in progress hold no reference on the namespace */
	flush_workqueue(coll_wq);
}

/**
 * coll_net_listen() - listen in @net, if not yet
 * @net: the caller's network namespace
 *
 * Return: 0, or -EADDRNOTAVAIL if the port cannot be bound there, or
 * another -errno.
 */
int coll_net_listen(struct net *net)
{
	struct coll_net *cn = net_generic(net, coll_net_id);
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
	u16 port = READ_ONCE(coll_port);
	struct socket *sock;
	int r;

	mutex_lock(&cn->lock);
	if (cn->sock) {
		mutex_unlock(&cn->lock);
		return 0;
	}
	r = sock_create_kern(net, AF_INET6, SOCK_STREAM, IPPROTO_TCP, &sock);
	if (r)
		goto out_unlock;
	sock_set_reuseaddr(sock->sk);
	sin6.sin6_port = htons(port);
	r = kernel_bind(sock, (struct sockaddr *)&sin6, sizeof(sin6));
	if (!r)
		r = kernel_listen(sock, 128);
	if (r) {
		sock_release(sock);
		r = -EADDRNOTAVAIL;
		goto out_unlock;
	}
	cn->sock = sock;
	cn->port = port;
	cn->thread = kthread_run(coll_net_accept_thread, cn, "coll_listen");
	if (IS_ERR(cn->thread)) {
		r = PTR_ERR(cn->thread);
		cn->thread = NULL;
		cn->sock = NULL;
		sock_release(sock);
		goto out_unlock;
	}
	coll_net_rdma_listen(cn, port);
out_unlock:
	mutex_unlock(&cn->lock);
	return r;
}

static int __net_init coll_net_init_net(struct net *net)
{
	struct coll_net *cn = net_generic(net, coll_net_id);

	mutex_init(&cn->lock);
	cn->net = net;
	atomic_set(&cn->pending, 0);
	return 0;
}

static void __net_exit coll_net_exit_net(struct net *net)
{
	coll_net_stop(net_generic(net, coll_net_id));
}

static struct pernet_operations coll_net_ops = {
	.init = coll_net_init_net,
	.exit = coll_net_exit_net,
	.id = &coll_net_id,
	.size = sizeof(struct coll_net),
};

int coll_net_init(void)
{
	int ret = register_pernet_subsys(&coll_net_ops);

	/*
	 * Listen in the initial namespace at once, so that a peer host does
	 * not find the port closed (and fall back) before this host's first
	 * communicator; failing here is not fatal (tried again on demand).
	 */
	if (!ret)
		coll_net_listen(&init_net);
	return ret;
}

void coll_net_exit(void)
{
	unregister_pernet_subsys(&coll_net_ops);
}
