// SPDX-License-Identifier: MIT
/*
 * A torch.distributed (c10d) process group on libcollective, for torch 1.13
 * (Debian 12's python3-torch / libtorch-dev).
 *
 * Every operation submits one non-blocking request (COLL_SUBMIT with
 * COLL_OP_F_NONBLOCK) and returns a Work for it.  One progress thread per
 * process group collects the requests in submission order with COLL_WAIT
 * (collectives of a communicator complete in the order they were
 * submitted), copies results out of staging buffers where an operation needed
 * one, and completes the Work and its Future; Work::wait() waits for that.
 * A failed request (ECONNRESET: a peer left) fails its Work; wait() then
 * throws, naming the errno.
 *
 * CPU tensors only.  Non-contiguous tensors are staged through contiguous
 * copies.  The communicator id comes from the caller (the Python side passes
 * it through torch's Store).
 */
#include <torch/extension.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <ATen/core/ivalue.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "libcollective.h"

namespace c10d_coll {

using c10d::OpType;
using ::kNoTimeout;
using c10d::ReduceOp;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

static std::string errno_text(int err)
{
	if (err < 0)
		err = -err;
	const char *name = strerrorname_np(err);

	return std::string(name ? name : "E?") + " (" + coll_strerror(-err) + ")";
}

[[noreturn]] static void fail(const std::string &op, const std::string &what)
{
	TORCH_CHECK(false, "collective: ", op, ": ", what);
	__builtin_unreachable();
}

static int to_coll_dtype(const std::string &op, const at::Tensor &t)
{
	switch (t.scalar_type()) {
	case at::kChar: return COLL_INT8;
	case at::kByte: return COLL_UINT8;
	case at::kInt: return COLL_INT32;
	case at::kLong: return COLL_INT64;
	case at::kHalf: return COLL_FP16;
	case at::kBFloat16: return COLL_BF16;
	case at::kFloat: return COLL_FP32;
	case at::kDouble: return COLL_FP64;
	default:
		fail(op, std::string("unsupported dtype ") +
			 c10::toString(t.scalar_type()) +
			 " (supported: float16, bfloat16, float32, float64, "
			 "int8, uint8, int32, int64)");
	}
}

static int to_coll_redop(const std::string &op, const ReduceOp &r)
{
	switch (r.op_) {
	case ReduceOp::SUM: return COLL_SUM;
	case ReduceOp::PRODUCT: return COLL_PROD;
	case ReduceOp::MIN: return COLL_MIN;
	case ReduceOp::MAX: return COLL_MAX;
	case ReduceOp::AVG: return COLL_AVG;
	default:
		fail(op, "unsupported ReduceOp " +
			 std::to_string(static_cast<int>(r.op_)) +
			 " (supported: SUM, PRODUCT, MIN, MAX, AVG)");
	}
}

static void check_tensor(const std::string &op, const at::Tensor &t)
{
	if (!t.defined())
		fail(op, "undefined tensor");
	if (!t.device().is_cpu())
		fail(op, "tensor on " + t.device().str() +
			 ": only CPU tensors are supported");
	if (t.is_sparse())
		fail(op, "sparse tensors are not supported");
	to_coll_dtype(op, t);
}

static void check_single(const std::string &op,
			 const std::vector<at::Tensor> &ts)
{
	if (ts.size() != 1)
		fail(op, "expects exactly one tensor per rank, got " +
			 std::to_string(ts.size()));
	check_tensor(op, ts[0]);
}

static void check_same(const std::string &op, const at::Tensor &a,
		       const at::Tensor &b, int64_t numel_factor)
{
	if (a.scalar_type() != b.scalar_type())
		fail(op, std::string("dtype mismatch: ") +
			 c10::toString(a.scalar_type()) + " and " +
			 c10::toString(b.scalar_type()));
	if (a.numel() != b.numel() * numel_factor)
		fail(op, "size mismatch: " + std::to_string(a.numel()) +
			 " elements where " +
			 std::to_string(b.numel() * numel_factor) +
			 " were expected");
}

/* A contiguous tensor holding @t's data (@t itself when it is contiguous). */
static at::Tensor dense(const at::Tensor &t)
{
	return t.is_contiguous() ? t : t.contiguous();
}

class ProcessGroupCollective;

class WorkCollective : public c10d::Work {
public:
	WorkCollective(int rank, OpType type, const char *name,
		       std::vector<at::Tensor> outputs)
		: c10d::Work(rank, type), name_(name),
		  outputs_(std::move(outputs)),
		  future_(c10::make_intrusive<at::ivalue::Future>(
			  c10::ListType::create(c10::TensorType::get())))
	{
	}

	bool isCompleted() override
	{
		std::lock_guard<std::mutex> lk(mutex_);
		return completed_;
	}

	bool isSuccess() const override
	{
		std::lock_guard<std::mutex> lk(mutex_);
		return completed_ && !exception_;
	}

	bool wait(std::chrono::milliseconds timeout) override
	{
		std::unique_lock<std::mutex> lk(mutex_);
		if (timeout == kNoTimeout) {
			cv_.wait(lk, [&] { return completed_; });
		} else if (!cv_.wait_for(lk, timeout,
					 [&] { return completed_; })) {
			fail(name_, "wait timed out after " +
				    std::to_string(timeout.count()) +
				    " ms (the request is still pending)");
		}
		if (exception_)
			std::rethrow_exception(exception_);
		return true;
	}

	void synchronize() override {}

	std::vector<at::Tensor> result() override { return outputs_; }

	c10::intrusive_ptr<c10::ivalue::Future> getFuture() override
	{
		return future_;
	}

	void abort() override
	{
		fail(name_, "abort() is not supported");
	}

	/* Called by the progress thread once the request(s) ended. */
	void complete(int err, const std::string &why = "")
	{
		std::exception_ptr ex;

		if (err == 0 && post_) {
			try {
				post_();
			} catch (...) {
				ex = std::current_exception();
			}
		}
		if (err) {
			std::string msg = "collective: " + name_ + " failed: " +
					  (why.empty() ? errno_text(err) : why);
			ex = std::make_exception_ptr(std::runtime_error(msg));
		}
		post_ = nullptr;
		keep_.clear();
		{
			std::lock_guard<std::mutex> lk(mutex_);
			completed_ = true;
			exception_ = ex;
		}
		cv_.notify_all();
		if (ex)
			future_->setError(ex);
		else
			future_->markCompleted(c10::IValue(outputs_));
	}

	std::string name_;
	std::vector<at::Tensor> outputs_;
	std::vector<at::Tensor> keep_;	/* buffers the kernel uses */
	std::function<void()> post_;	/* copy-out after success */
	coll_req_t req_{};
	c10::intrusive_ptr<at::ivalue::Future> future_;
};

/*
 * Where ranks on several hosts meet (libcollective's rendezvous), or ""
 * when they are all on this one: COLL_ROOT=host:port if set (the selftest
 * rig also exports COLL_ROOT as the project's directory: a value with a
 * '/' or without a ':' is not a rendezvous); else, when torchrun says the
 * group spans hosts (LOCAL_WORLD_SIZE below the world size), MASTER_ADDR
 * at MASTER_PORT + 1, as coll_comm_init_env() does (MASTER_PORT is torch's
 * own store).
 */
static std::string rendezvous(int size)
{
	const char *root = getenv("COLL_ROOT");
	const char *lws = getenv("LOCAL_WORLD_SIZE");
	const char *addr = getenv("MASTER_ADDR");
	const char *port = getenv("MASTER_PORT");

	if (root && strchr(root, ':') && !strchr(root, '/'))
		return root;
	if (!lws || !addr || !*addr || !port || atoi(lws) <= 0 ||
	    atoi(lws) >= size || atoi(port) <= 0 || atoi(port) >= 65535)
		return "";
	std::string a(addr);

	if (a.find(':') != std::string::npos)
		a = "[" + a + "]";
	return a + ":" + std::to_string(atoi(port) + 1);
}

class ProcessGroupCollective : public c10d::ProcessGroup {
public:
	ProcessGroupCollective(int rank, int size, const std::string &idstr,
			       int64_t timeout_ms)
		: c10d::ProcessGroup(rank, size)
	{
		coll_id_t id;
		int ret = coll_id_from_str(&id, idstr.c_str());

		if (ret)
			fail("init", "bad communicator id '" + idstr + "': " +
				     errno_text(ret));
		unsigned int tmo = timeout_ms <= 0 ? 0 :
			timeout_ms > 0x7fffffff ? 0x7fffffffu :
			static_cast<unsigned int>(timeout_ms);
		std::string root = rendezvous(size);

		if (!root.empty())
			ret = coll_comm_init_root(&comm_, size, rank, &id,
						  root.c_str(), tmo, 0);
		else
			ret = coll_comm_init(&comm_, size, rank, &id, tmo);
		if (ret)
			fail("init", "joining the communicator (rank " +
				     std::to_string(rank) + " of " +
				     std::to_string(size) + ") failed: " +
				     errno_text(ret));
		progress_ = std::thread([this] { progress_loop(); });
	}

	~ProcessGroupCollective() override
	{
		{
			std::lock_guard<std::mutex> lk(qmu_);
			stop_ = true;
		}
		qcv_.notify_all();
		if (progress_.joinable())
			progress_.join();
		coll_comm_destroy(comm_);
	}

	const std::string getBackendName() const override
	{
		return "collective";
	}

	WorkPtr broadcast(std::vector<at::Tensor> &tensors,
			  const c10d::BroadcastOptions &opts) override
	{
		const char *op = "broadcast";

		check_single(op, tensors);
		check_root(op, opts.rootRank);
		auto &t = tensors[0];
		auto buf = dense(t);
		auto w = make_work(OpType::BROADCAST, op, {t}, {buf});
		copy_back(w, t, buf);
		return submit(w, COLL_BROADCAST, buf.data_ptr(), buf.data_ptr(),
			      buf.numel(), to_coll_dtype(op, t), 0,
			      opts.rootRank);
	}

	WorkPtr allreduce(std::vector<at::Tensor> &tensors,
			  const c10d::AllreduceOptions &opts) override
	{
		const char *op = "allreduce";

		check_single(op, tensors);
		auto &t = tensors[0];
		int redop = to_coll_redop(op, opts.reduceOp);
		auto buf = dense(t);
		auto w = make_work(OpType::ALLREDUCE, op, {t}, {buf});
		copy_back(w, t, buf);
		return submit(w, COLL_ALLREDUCE, buf.data_ptr(), buf.data_ptr(),
			      buf.numel(), to_coll_dtype(op, t), redop, 0);
	}

	/* All tensors through one flat buffer: one collective. */
	WorkPtr allreduce_coalesced(
		std::vector<at::Tensor> &tensors,
		const c10d::AllreduceCoalescedOptions &opts) override
	{
		const char *op = "allreduce_coalesced";

		if (tensors.empty())
			fail(op, "no tensors");
		std::vector<at::Tensor> flat;
		for (auto &t : tensors) {
			check_tensor(op, t);
			if (t.scalar_type() != tensors[0].scalar_type())
				fail(op, "all tensors must have one dtype");
			flat.push_back(t.reshape({-1}));
		}
		int redop = to_coll_redop(op, opts.reduceOp);
		auto buf = at::cat(flat);
		auto w = make_work(OpType::ALLREDUCE_COALESCED, op, tensors,
				   {buf});
		auto outs = tensors;
		w->post_ = [outs, buf]() mutable {
			int64_t off = 0;
			for (auto &t : outs) {
				t.copy_(buf.narrow(0, off, t.numel()).view(
					t.sizes()));
				off += t.numel();
			}
		};
		return submit(w, COLL_ALLREDUCE, buf.data_ptr(), buf.data_ptr(),
			      buf.numel(), to_coll_dtype(op, tensors[0]), redop,
			      0);
	}

	WorkPtr reduce(std::vector<at::Tensor> &tensors,
		       const c10d::ReduceOptions &opts) override
	{
		const char *op = "reduce";

		check_single(op, tensors);
		check_root(op, opts.rootRank);
		auto &t = tensors[0];
		int redop = to_coll_redop(op, opts.reduceOp);
		auto buf = dense(t);
		auto w = make_work(OpType::REDUCE, op, {t}, {buf});
		if (getRank() == opts.rootRank)
			copy_back(w, t, buf);
		return submit(w, COLL_REDUCE, buf.data_ptr(), buf.data_ptr(),
			      buf.numel(), to_coll_dtype(op, t), redop,
			      opts.rootRank);
	}

	WorkPtr allgather(std::vector<std::vector<at::Tensor>> &outputs,
			  std::vector<at::Tensor> &inputs,
			  const c10d::AllgatherOptions &) override
	{
		const char *op = "allgather";

		check_single(op, inputs);
		if (outputs.size() != 1 ||
		    outputs[0].size() != static_cast<size_t>(getSize()))
			fail(op, "expects one list of world_size (" +
				     std::to_string(getSize()) +
				     ") output tensors");
		auto in = dense(inputs[0]);
		for (auto &o : outputs[0]) {
			check_tensor(op, o);
			check_same(op, o, in, 1);
		}
		auto flat = at::empty({getSize() * in.numel()}, in.options());
		auto w = make_work(OpType::ALLGATHER, op, outputs[0],
				   {in, flat});
		auto outs = outputs[0];
		int64_t n = in.numel();
		w->post_ = [outs, flat, n]() mutable {
			for (size_t i = 0; i < outs.size(); i++)
				outs[i].copy_(flat.narrow(0, i * n, n).view(
					outs[i].sizes()));
		};
		return submit(w, COLL_ALLGATHER, in.data_ptr(), flat.data_ptr(),
			      n, to_coll_dtype(op, in), 0, 0);
	}

	WorkPtr _allgather_base(at::Tensor &output, at::Tensor &input,
				const c10d::AllgatherOptions &) override
	{
		const char *op = "_allgather_base";

		check_tensor(op, input);
		check_tensor(op, output);
		check_same(op, output, input, getSize());
		auto in = dense(input);
		auto out = dense(output);
		auto w = make_work(OpType::_ALLGATHER_BASE, op, {output},
				   {in, out});
		copy_back(w, output, out);
		return submit(w, COLL_ALLGATHER, in.data_ptr(), out.data_ptr(),
			      in.numel(), to_coll_dtype(op, in), 0, 0);
	}

	WorkPtr reduce_scatter(std::vector<at::Tensor> &outputs,
			       std::vector<std::vector<at::Tensor>> &inputs,
			       const c10d::ReduceScatterOptions &opts) override
	{
		const char *op = "reduce_scatter";

		check_single(op, outputs);
		if (inputs.size() != 1 ||
		    inputs[0].size() != static_cast<size_t>(getSize()))
			fail(op, "expects one list of world_size (" +
				     std::to_string(getSize()) +
				     ") input tensors");
		auto &out = outputs[0];
		std::vector<at::Tensor> flat;
		for (auto &i : inputs[0]) {
			check_tensor(op, i);
			check_same(op, i, out, 1);
			flat.push_back(i.reshape({-1}));
		}
		int redop = to_coll_redop(op, opts.reduceOp);
		auto in = at::cat(flat);
		auto buf = dense(out);
		auto w = make_work(OpType::REDUCE_SCATTER, op, {out},
				   {in, buf});
		copy_back(w, out, buf);
		return submit(w, COLL_REDUCESCATTER, in.data_ptr(),
			      buf.data_ptr(), buf.numel(),
			      to_coll_dtype(op, out), redop, 0);
	}

	WorkPtr _reduce_scatter_base(
		at::Tensor &output, at::Tensor &input,
		const c10d::ReduceScatterOptions &opts) override
	{
		const char *op = "_reduce_scatter_base";

		check_tensor(op, input);
		check_tensor(op, output);
		check_same(op, input, output, getSize());
		int redop = to_coll_redop(op, opts.reduceOp);
		auto in = dense(input);
		auto out = dense(output);
		auto w = make_work(OpType::_REDUCE_SCATTER_BASE, op, {output},
				   {in, out});
		copy_back(w, output, out);
		return submit(w, COLL_REDUCESCATTER, in.data_ptr(),
			      out.data_ptr(), out.numel(),
			      to_coll_dtype(op, out), redop, 0);
	}

	WorkPtr gather(std::vector<std::vector<at::Tensor>> &outputs,
		       std::vector<at::Tensor> &inputs,
		       const c10d::GatherOptions &opts) override
	{
		const char *op = "gather";

		check_single(op, inputs);
		check_root(op, opts.rootRank);
		auto in = dense(inputs[0]);
		int64_t n = in.numel();
		if (getRank() != opts.rootRank) {
			if (!outputs.empty() && !outputs[0].empty())
				fail(op, "output tensors given on a non-root rank");
			auto w = make_work(OpType::GATHER, op, {}, {in});
			return submit(w, COLL_GATHER, in.data_ptr(), nullptr,
				      n, to_coll_dtype(op, in), 0,
				      opts.rootRank);
		}
		if (outputs.size() != 1 ||
		    outputs[0].size() != static_cast<size_t>(getSize()))
			fail(op, "expects one list of world_size (" +
				     std::to_string(getSize()) +
				     ") output tensors at the root");
		for (auto &o : outputs[0]) {
			check_tensor(op, o);
			check_same(op, o, in, 1);
		}
		auto flat = at::empty({getSize() * n}, in.options());
		auto w = make_work(OpType::GATHER, op, outputs[0], {in, flat});
		auto outs = outputs[0];
		w->post_ = [outs, flat, n]() mutable {
			for (size_t i = 0; i < outs.size(); i++)
				outs[i].copy_(flat.narrow(0, i * n, n).view(
					outs[i].sizes()));
		};
		return submit(w, COLL_GATHER, in.data_ptr(), flat.data_ptr(), n,
			      to_coll_dtype(op, in), 0, opts.rootRank);
	}

	WorkPtr scatter(std::vector<at::Tensor> &outputs,
			std::vector<std::vector<at::Tensor>> &inputs,
			const c10d::ScatterOptions &opts) override
	{
		const char *op = "scatter";

		check_single(op, outputs);
		check_root(op, opts.rootRank);
		auto &out = outputs[0];
		auto buf = dense(out);
		at::Tensor in;
		if (getRank() == opts.rootRank) {
			if (inputs.size() != 1 ||
			    inputs[0].size() != static_cast<size_t>(getSize()))
				fail(op, "expects one list of world_size (" +
					     std::to_string(getSize()) +
					     ") input tensors at the root");
			std::vector<at::Tensor> flat;
			for (auto &i : inputs[0]) {
				check_tensor(op, i);
				check_same(op, i, out, 1);
				flat.push_back(i.reshape({-1}));
			}
			in = at::cat(flat);
		} else if (!inputs.empty() && !inputs[0].empty()) {
			fail(op, "input tensors given on a non-root rank");
		}
		auto w = make_work(OpType::SCATTER, op, {out}, {in, buf});
		copy_back(w, out, buf);
		return submit(w, COLL_SCATTER,
			      in.defined() ? in.data_ptr() : nullptr,
			      buf.data_ptr(), buf.numel(),
			      to_coll_dtype(op, out), 0, opts.rootRank);
	}

	WorkPtr alltoall_base(at::Tensor &output, at::Tensor &input,
			      std::vector<int64_t> &outputSplits,
			      std::vector<int64_t> &inputSplits,
			      const c10d::AllToAllOptions &) override
	{
		const char *op = "alltoall_base";

		check_tensor(op, input);
		check_tensor(op, output);
		check_same(op, output, input, 1);
		int64_t rows = input.dim() ? input.size(0) : 1;
		if (rows % getSize())
			fail(op, "the first dimension (" + std::to_string(rows) +
				     ") is not a multiple of world_size (" +
				     std::to_string(getSize()) + ")");
		check_splits(op, "input_split_sizes", inputSplits,
			     rows / getSize());
		check_splits(op, "output_split_sizes", outputSplits,
			     rows / getSize());
		auto in = dense(input);
		auto out = dense(output);
		auto w = make_work(OpType::ALLTOALL_BASE, op, {output},
				   {in, out});
		copy_back(w, output, out);
		return submit(w, COLL_ALLTOALL, in.data_ptr(), out.data_ptr(),
			      in.numel() / getSize(), to_coll_dtype(op, in), 0,
			      0);
	}

	WorkPtr barrier(const c10d::BarrierOptions &) override
	{
		auto w = make_work(OpType::BARRIER, "barrier", {}, {});
		return submit(w, COLL_BARRIER, nullptr, nullptr, 0, 0, 0, 0);
	}

private:
	void check_root(const std::string &op, int64_t root)
	{
		if (root < 0 || root >= getSize())
			fail(op, "root rank " + std::to_string(root) +
				     " out of range [0, " +
				     std::to_string(getSize()) + ")");
	}

	void check_splits(const std::string &op, const char *what,
			  const std::vector<int64_t> &splits, int64_t each)
	{
		if (splits.empty())
			return;
		if (splits.size() != static_cast<size_t>(getSize()))
			fail(op, std::string(what) + " has " +
				     std::to_string(splits.size()) +
				     " entries, world_size is " +
				     std::to_string(getSize()));
		for (auto s : splits)
			if (s != each)
				fail(op, std::string("unequal ") + what +
					 " are not supported: the module's "
					 "AlltoAll moves equal blocks "
					 "(an AlltoAllv primitive is missing)");
	}

	c10::intrusive_ptr<WorkCollective>
	make_work(OpType type, const char *name, std::vector<at::Tensor> outs,
		  std::vector<at::Tensor> keep)
	{
		auto w = c10::make_intrusive<WorkCollective>(getRank(), type,
							     name,
							     std::move(outs));
		w->keep_ = std::move(keep);
		return w;
	}

	/* After success, copy a staging buffer back into a non-contiguous @t. */
	static void copy_back(const c10::intrusive_ptr<WorkCollective> &w,
			      const at::Tensor &t, const at::Tensor &buf)
	{
		if (t.is_same(buf))
			return;
		auto dst = t;
		auto src = buf;
		w->post_ = [dst, src]() mutable { dst.copy_(src); };
	}

	WorkPtr submit(const c10::intrusive_ptr<WorkCollective> &w, int prim,
		       const void *send, void *recv, int64_t count, int dtype,
		       int redop, int64_t root)
	{
		std::lock_guard<std::mutex> lk(qmu_);
		int ret = coll_submit(comm_, prim, send, recv,
				      static_cast<size_t>(count), dtype, redop,
				      static_cast<int>(root), COLL_OP_F_NONBLOCK,
				      &w->req_);

		if (ret)
			fail(w->name_, "submit failed: " + errno_text(ret));
		queue_.push_back(w);
		qcv_.notify_one();
		return w;
	}

	/* Collect requests in submission order; complete their Work. */
	void progress_loop()
	{
		for (;;) {
			c10::intrusive_ptr<WorkCollective> w;
			{
				std::unique_lock<std::mutex> lk(qmu_);
				qcv_.wait(lk, [&] {
					return stop_ || !queue_.empty();
				});
				if (queue_.empty())
					return;
				w = queue_.front();
			}
			int ret;
			for (;;) {
				ret = coll_wait(&w->req_, 200);
				if (ret != -ETIMEDOUT)
					break;
				std::lock_guard<std::mutex> lk(qmu_);
				if (stop_)
					break;
			}
			{
				std::lock_guard<std::mutex> lk(qmu_);
				queue_.pop_front();
			}
			if (ret == -ETIMEDOUT)
				w->complete(ESHUTDOWN, "the process group was "
						       "destroyed while the "
						       "request was pending");
			else
				w->complete(ret);
		}
	}

	coll_comm_t *comm_ = nullptr;
	std::mutex qmu_;
	std::condition_variable qcv_;
	std::deque<c10::intrusive_ptr<WorkCollective>> queue_;
	bool stop_ = false;
	std::thread progress_;
};

static std::string new_id()
{
	coll_id_t id;
	char buf[64];
	int ret = coll_get_unique_id(&id);

	if (ret == 0)
		ret = coll_id_to_str(&id, buf, sizeof(buf));
	if (ret)
		fail("new_id", errno_text(ret));
	return buf;
}

} // namespace c10d_coll

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
	namespace py = pybind11;
	using c10d_coll::ProcessGroupCollective;

	m.doc() = "torch.distributed process group on /dev/collective";
	m.def("new_id", &c10d_coll::new_id,
	      "A fresh communicator id (32 hex digits)");
	py::class_<ProcessGroupCollective, c10d::ProcessGroup,
		   c10::intrusive_ptr<ProcessGroupCollective>>(
		m, "ProcessGroupCollective")
		.def(py::init<int, int, const std::string &, int64_t>(),
		     py::arg("rank"), py::arg("size"), py::arg("id"),
		     py::arg("timeout_ms"),
		     py::call_guard<py::gil_scoped_release>());
}
