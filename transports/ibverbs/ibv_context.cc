#include "transports/ibverbs/ibv_context.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "transports/ibverbs/ibv_devices.h"

namespace loom {
namespace {

ibv_context* openByName(const std::string& name) {
  int count = 0;
  std::unique_ptr<ibv_device*, void (*)(ibv_device**)> list(ibv_get_device_list(&count),
                                                            ibv_free_device_list);
  for (int i = 0; list && i < count; ++i) {
    if (name != ibv_get_device_name(list.get()[i])) continue;
    ibv_context* context = ibv_open_device(list.get()[i]);
    if (context == nullptr) {
      raise(ErrorCode::SystemError, "ibverbs: ibv_open_device({}) failed: {}", name,
            std::strerror(errno));
    }
    return context;
  }
  raise(ErrorCode::SystemError, "ibverbs: RDMA device {} disappeared while opening it", name);
}

}  // namespace

std::shared_ptr<IbvContext> IbvContext::open(const IbvConfig& config) {
  const IbvPortChoice choice = chooseIbvPort(listIbvDevices(), config.device, config.port);
  std::shared_ptr<IbvContext> self(new IbvContext());
  self->name_ = choice.device;
  self->context_ = openByName(choice.device);
  self->local_.port = static_cast<uint8_t>(choice.port);

  ibv_device_attr device{};
  if (const int rc = ibv_query_device(self->context_, &device); rc != 0) {
    raise(ErrorCode::SystemError, "ibverbs: ibv_query_device({}) failed: {}", self->name_,
          std::strerror(rc));
  }
  self->maxQpWr_ = device.max_qp_wr;
  self->maxCqe_ = device.max_cqe;
  ibv_port_attr port{};
  if (const int rc = ibv_query_port(self->context_, self->local_.port, &port); rc != 0) {
    raise(ErrorCode::SystemError, "ibverbs: ibv_query_port({}) failed: {}", self->where(),
          std::strerror(rc));
  }
  self->choosePortAddress(config, port);

  self->pd_ = ibv_alloc_pd(self->context_);
  if (self->pd_ == nullptr) {
    raise(ErrorCode::SystemError, "ibverbs: ibv_alloc_pd on {} failed: {}", self->where(),
          std::strerror(errno));
  }
  ibv_pd* pd = self->pd_;
  const std::string where = self->where();
  // Every registration may serve as a receive ring, which the peer writes.
  auto registerFn = [pd, where](uintptr_t begin, size_t length) {
    ibv_mr* mr = ibv_reg_mr(pd, reinterpret_cast<void*>(begin), length,
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (mr == nullptr) {
      raise(ErrorCode::SystemError,
            "ibverbs: ibv_reg_mr of {} bytes on {} failed: {} (is the locked-memory limit, "
            "ulimit -l, large enough?)",
            length, where, std::strerror(errno));
    }
    return IbvRegion{begin, length, mr->lkey, mr->rkey, mr};
  };
  auto deregisterFn = [where](const IbvRegion& region) {
    if (const int rc = ibv_dereg_mr(static_cast<ibv_mr*>(region.handle)); rc != 0) {
      LOOM_WARN("ibverbs: ibv_dereg_mr of {} bytes on {} failed: {}", region.length, where,
                std::strerror(rc));
    }
  };
  self->memory_ =
      std::make_unique<IbvMemoryRegistry>(registerFn, deregisterFn, IbvMemoryRegistry::Options{});
  LOOM_INFO("ibverbs: opened {} ({}, mtu {}, lid {}, gid index {})", where,
            self->local_.linkLayer == IbvLinkLayer::Ethernet ? "RoCE" : "InfiniBand",
            ibvMtuBytes(self->local_.activeMtu), self->lid_, self->local_.gidIndex);
  return self;
}

void IbvContext::choosePortAddress(const IbvConfig& config, const ibv_port_attr& port) {
  local_.activeMtu = static_cast<uint8_t>(port.active_mtu);
  local_.linkLayer = port.link_layer == IBV_LINK_LAYER_ETHERNET ? IbvLinkLayer::Ethernet
                                                                : IbvLinkLayer::InfiniBand;
  lid_ = port.lid;
  maxMessageBytes_ = port.max_msg_sz;
  int index = config.gidIndex;
  if (index < 0 && local_.linkLayer == IbvLinkLayer::Ethernet) {
    std::vector<IbvGidCandidate> table;
    for (int i = 0; i < port.gid_tbl_len; ++i) {
      ibv_gid_entry entry{};
      // Unpopulated entries fail (ENODATA); they are simply not candidates.
      if (ibv_query_gid_ex(context_, local_.port, static_cast<uint32_t>(i), &entry, 0) != 0) {
        continue;
      }
      IbvGidCandidate c;
      c.index = entry.gid_index;
      c.type = entry.gid_type;
      std::memcpy(c.gid.data(), entry.gid.raw, c.gid.size());
      table.push_back(c);
    }
    index = chooseRoceGidIndex(table);
    if (index < 0) {
      raise(ErrorCode::InvalidUsage,
            "ibverbs: {} is a RoCE port without a usable GID (no IP address on its netdev?)",
            where());
    }
  }
  if (index < 0) index = 0;
  if (index >= port.gid_tbl_len || index > 255) {
    raise(ErrorCode::InvalidArgument, "ibverbs: GID index {} is outside {}'s table of {}", index,
          where(), port.gid_tbl_len);
  }
  local_.gidIndex = static_cast<uint8_t>(index);
  ibv_gid gid{};
  if (const int rc = ibv_query_gid(context_, local_.port, index, &gid); rc != 0) {
    raise(ErrorCode::SystemError, "ibverbs: ibv_query_gid({}, index {}) failed: {}", where(), index,
          std::strerror(rc == -1 ? errno : rc));
  }
  std::memcpy(gid_.data(), gid.raw, gid_.size());
  if (local_.linkLayer == IbvLinkLayer::InfiniBand && (lid_ == 0 || lid_ > 0xbfff)) {
    raise(ErrorCode::InvalidUsage,
          "ibverbs: {} has no unicast LID ({:#x}); is a subnet manager running?", where(), lid_);
  }
}

std::string IbvContext::where() const { return fmt::format("{} port {}", name_, local_.port); }

IbvContext::~IbvContext() {
  memory_.reset();
  if (pd_ != nullptr && ibv_dealloc_pd(pd_) != 0) {
    LOOM_WARN("ibverbs: ibv_dealloc_pd on {} failed (a queue pair or registration leaked?)",
              where());
  }
  if (context_ != nullptr) ibv_close_device(context_);
}

}  // namespace loom
