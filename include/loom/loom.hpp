/// Loom's C++ API: a thin, header-only layer over loom.h. Errors become
/// loom::Exception; communicators are RAII; buffers are std::span.
#ifndef LOOM_LOOM_HPP_
#define LOOM_LOOM_HPP_

#if __cplusplus < 202002L
#error "loom/loom.hpp needs C++20 (std::span): compile with -std=c++20, or use loom/loom.h"
#endif

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/loom.h"

namespace loom {

/// A failed Loom call: the result code plus loomGetLastError()'s message.
class Exception : public std::runtime_error {
 public:
  Exception(loomResult_t result, const std::string& message)
      : std::runtime_error(message), result_(result) {}
  loomResult_t result() const { return result_; }

 private:
  loomResult_t result_;
};

inline void check(loomResult_t result) {
  if (result != loomSuccess) {
    throw Exception(result,
                    std::string(loomGetErrorString(result)) + ": " + loomGetLastError(nullptr));
  }
}

/// The loomDataType_t of T, for the typed overloads.
template <typename T>
constexpr loomDataType_t dataTypeOf() {
  if constexpr (std::is_same_v<T, int8_t>)
    return loomInt8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return loomUint8;
  else if constexpr (std::is_same_v<T, int32_t>)
    return loomInt32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return loomUint32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return loomInt64;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return loomUint64;
  else if constexpr (std::is_same_v<T, float>)
    return loomFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return loomFloat64;
  else
    static_assert(sizeof(T) == 0,
                  "no Loom data type for this T (use the raw overloads for fp16/bf16)");
}

/// Opens a group for the scope's calls; they run when it ends.
class Group {
 public:
  Group() { check(loomGroupStart()); }
  ~Group() noexcept(false) { check(loomGroupEnd()); }  // NOLINT(bugprone-exception-escape)
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
};

/// `count` zeroed elements of T in loomMemAlloc's host memory, which ranks in
/// other processes read in place once it is registered with their
/// communicator (Comm::registerBuffer).
template <typename T>
class SharedArray {
 public:
  explicit SharedArray(size_t count) : count_(count) {
    if (count > SIZE_MAX / sizeof(T)) {
      throw Exception(loomInvalidArgument,
                      "SharedArray: " + std::to_string(count) + " elements do not fit in memory");
    }
    void* memory = nullptr;
    check(loomMemAlloc(&memory, count * sizeof(T)));
    data_ = static_cast<T*>(memory);
  }
  SharedArray(SharedArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  SharedArray& operator=(SharedArray&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  SharedArray(const SharedArray&) = delete;
  SharedArray& operator=(const SharedArray&) = delete;
  ~SharedArray() { reset(); }

  T* data() const { return data_; }
  size_t size() const { return count_; }
  T& operator[](size_t i) const { return data_[i]; }
  std::span<T> span() const { return {data_, count_}; }

 private:
  void reset() {
    if (data_ != nullptr) loomMemFree(data_);
    data_ = nullptr;
  }
  T* data_ = nullptr;
  size_t count_ = 0;
};

/// A buffer registered with a communicator until this is destroyed, which
/// must happen before the communicator is.
class Registration {
 public:
  Registration() = default;
  Registration(loomComm_t comm, void* handle) : comm_(comm), handle_(handle) {}
  Registration(Registration&& other) noexcept
      : comm_(std::exchange(other.comm_, nullptr)),
        handle_(std::exchange(other.handle_, nullptr)) {}
  Registration& operator=(Registration&& other) noexcept {
    if (this != &other) {
      reset();
      comm_ = std::exchange(other.comm_, nullptr);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  ~Registration() { reset(); }

 private:
  void reset() {
    if (comm_ != nullptr) loomCommDeregister(comm_, handle_);
    comm_ = nullptr;
  }
  loomComm_t comm_ = nullptr;
  void* handle_ = nullptr;
};

/// Owns a loomComm_t.
class Comm {
 public:
  Comm() = default;
  explicit Comm(loomComm_t raw) : comm_(raw) {}
  /// Joins the world described by the launcher's environment (loomrun, mpirun, srun, torchrun).
  static Comm fromEnv() {
    loomComm_t raw = nullptr;
    check(loomCommInitFromEnv(&raw));
    return Comm(raw);
  }
  static Comm initRank(int nranks, const loomUniqueId& id, int rank) {
    loomComm_t raw = nullptr;
    check(loomCommInitRank(&raw, nranks, id, rank));
    return Comm(raw);
  }
  /// `n` ranks in this process, one communicator each.
  static std::vector<Comm> initAll(int n) {
    std::vector<loomComm_t> raw(static_cast<size_t>(n));
    check(loomCommInitAll(raw.data(), n, nullptr));
    std::vector<Comm> comms;
    comms.reserve(raw.size());
    for (loomComm_t c : raw) comms.emplace_back(c);
    return comms;
  }
  Comm(Comm&& other) noexcept : comm_(std::exchange(other.comm_, nullptr)) {}
  Comm& operator=(Comm&& other) noexcept {
    if (this != &other) {
      reset();
      comm_ = std::exchange(other.comm_, nullptr);
    }
    return *this;
  }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm() { reset(); }

  loomComm_t get() const { return comm_; }
  explicit operator bool() const { return comm_ != nullptr; }
  int rank() const {
    int r = 0;
    check(loomCommUserRank(comm_, &r));
    return r;
  }
  int size() const {
    int n = 0;
    check(loomCommCount(comm_, &n));
    return n;
  }
  /// New communicator of the ranks that pass the same color; empty for LOOM_SPLIT_NOCOLOR.
  Comm split(int color, int key) const {
    loomComm_t raw = nullptr;
    check(loomCommSplit(comm_, color, key, &raw));
    return Comm(raw);
  }
  /// Registers `buffer` (loomCommRegister): from a SharedArray, this
  /// communicator's large calls on it read it in place from other processes.
  template <typename T>
  Registration registerBuffer(std::span<T> buffer) const {
    void* handle = nullptr;
    check(loomCommRegister(comm_, const_cast<std::remove_const_t<T>*>(buffer.data()),
                           buffer.size_bytes(), &handle));
    return Registration(comm_, handle);
  }
  /// Every live rank's calls on this communicator return loomRevoked.
  void revoke() const { check(loomCommRevoke(comm_)); }
  /// The survivors' communicator (loomCommShrink): `exclude` plus the ranks
  /// that died, left or stayed silent are out; the others are renumbered in order.
  Comm shrink(std::span<const int> exclude = {}, int flags = LOOM_SHRINK_DEFAULT) const {
    loomComm_t raw = nullptr;
    check(loomCommShrink(comm_, exclude.data(), static_cast<int>(exclude.size()), &raw, flags));
    return Comm(raw);
  }
  /// On one member: the id new ranks grow this communicator with (loomCommGetUniqueId).
  loomUniqueId growId() const {
    loomUniqueId id;
    check(loomCommGetUniqueId(comm_, &id));
    return id;
  }
  /// On every member: this communicator with new ranks above its own (loomCommGrow).
  Comm grow(int nranks) const {
    loomComm_t raw = nullptr;
    check(loomCommGrow(comm_, nranks, nullptr, -1, &raw));
    return Comm(raw);
  }
  /// On a new rank: joins the grown communicator as `rank` through `id`.
  static Comm joinGrown(int nranks, const loomUniqueId& id, int rank) {
    loomComm_t raw = nullptr;
    check(loomCommGrow(nullptr, nranks, &id, rank, &raw));
    return Comm(raw);
  }

  template <typename T>
  void allReduce(std::span<const T> send, std::span<T> recv, loomRedOp_t op = loomSum) const {
    requireSize(recv.size(), send.size(), "allReduce");
    check(
        loomAllReduce(send.data(), recv.data(), send.size(), dataTypeOf<T>(), op, comm_, nullptr));
  }
  /// In place.
  template <typename T>
  void allReduce(std::span<T> data, loomRedOp_t op = loomSum) const {
    check(
        loomAllReduce(data.data(), data.data(), data.size(), dataTypeOf<T>(), op, comm_, nullptr));
  }
  template <typename T>
  void allGather(std::span<const T> send, std::span<T> recv) const {
    requireSize(recv.size(), send.size() * size(), "allGather");
    check(loomAllGather(send.data(), recv.data(), send.size(), dataTypeOf<T>(), comm_, nullptr));
  }
  template <typename T>
  void reduceScatter(std::span<const T> send, std::span<T> recv, loomRedOp_t op = loomSum) const {
    requireSize(send.size(), recv.size() * size(), "reduceScatter");
    check(loomReduceScatter(send.data(), recv.data(), recv.size(), dataTypeOf<T>(), op, comm_,
                            nullptr));
  }
  template <typename T>
  void broadcast(std::span<T> data, int root) const {
    check(loomBroadcast(data.data(), data.data(), data.size(), dataTypeOf<T>(), root, comm_,
                        nullptr));
  }
  template <typename T>
  void reduce(std::span<const T> send, std::span<T> recv, int root,
              loomRedOp_t op = loomSum) const {
    check(loomReduce(send.data(), recv.data(), send.size(), dataTypeOf<T>(), op, root, comm_,
                     nullptr));
  }
  template <typename T>
  void allToAll(std::span<const T> send, std::span<T> recv) const {
    requireSize(recv.size(), send.size(), "allToAll");
    check(loomAllToAll(send.data(), recv.data(), send.size() / size(), dataTypeOf<T>(), comm_,
                       nullptr));
  }
  template <typename T>
  void send(std::span<const T> data, int peer) const {
    check(loomSend(data.data(), data.size(), dataTypeOf<T>(), peer, comm_, nullptr));
  }
  template <typename T>
  void recv(std::span<T> data, int peer) const {
    check(loomRecv(data.data(), data.size(), dataTypeOf<T>(), peer, comm_, nullptr));
  }

 private:
  static void requireSize(size_t have, size_t need, const char* what) {
    if (have != need) {
      throw Exception(loomInvalidArgument, std::string(what) + ": buffer sizes do not match (" +
                                               std::to_string(have) + " vs " +
                                               std::to_string(need) + " elements)");
    }
  }
  void reset() {
    if (comm_ != nullptr) loomCommDestroy(comm_);
    comm_ = nullptr;
  }
  loomComm_t comm_ = nullptr;
};

}  // namespace loom

#endif  // LOOM_LOOM_HPP_
