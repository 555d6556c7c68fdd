// Traffic through any Link for the transport tests (tcp, ucx): every byte of
// every message is a function of (sender, receiver, message index, offset),
// so a lost, repeated, reordered or corrupted message shows.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/deadline.h"
#include "transports/link.h"

namespace loom::link_traffic {

using Links = std::vector<std::unique_ptr<Link>>;

inline uint8_t byteOf(int from, int to, int index, size_t i) {
  return static_cast<uint8_t>(from * 131 + to * 31 + index * 7 + i * 13 + (i >> 8));
}

/// Empty, tiny, odd, striped or eager, rendezvous and full-slot messages.
inline size_t sizeOf(int index, size_t slotBytes) {
  const size_t sizes[] = {0, 1, 7, 1023, 65537, slotBytes, 200001 % (slotBytes + 1), 3};
  return sizes[index % 8];
}

/// Sleeps until a link's fd is readable or `ms` passed.
inline void waitIdle(const Links& links, int ms = 1) {
  std::vector<pollfd> fds;
  for (const auto& l : links) fds.push_back({l->pollFd(), POLLIN, 0});
  ::poll(fds.data(), fds.size(), ms);
}

/// Every rank sends `count` messages to every peer and receives as many,
/// interleaved, checking each byte and the order; fails the test if not done
/// within `limit`.
inline void exchange(int me, Links& links, int count, size_t slotBytes,
                     std::chrono::seconds limit = std::chrono::seconds(30)) {
  std::vector<int> sent(links.size(), 0);
  std::vector<int> received(links.size(), 0);
  const Deadline deadline = Deadline::after(limit);
  for (;;) {
    bool done = true;
    bool moved = false;
    for (size_t i = 0; i < links.size(); ++i) {
      Link& link = *links[i];
      const int peer = link.peer();
      moved |= link.progress();
      if (sent[i] < count) {
        const size_t size = sizeOf(sent[i], slotBytes);
        if (auto* slot = static_cast<uint8_t*>(link.trySendSlot(size))) {
          for (size_t b = 0; b < size; ++b) slot[b] = byteOf(me, peer, sent[i], b);
          link.commitSend(size);
          ++sent[i];
          moved = true;
        }
      }
      if (received[i] < count) {
        const size_t size = sizeOf(received[i], slotBytes);
        if (auto* data = static_cast<const uint8_t*>(link.tryRecv(size))) {
          for (size_t b = 0; b < size; ++b) {
            if (data[b] != byteOf(peer, me, received[i], b)) {
              FAIL() << "rank " << me << " from " << peer << " message " << received[i] << " byte "
                     << b;
            }
          }
          link.releaseRecv();
          ++received[i];
          moved = true;
        }
      }
      done &= sent[i] == count && received[i] == count && link.sendsDrained();
    }
    if (done) return;
    ASSERT_FALSE(deadline.expired()) << "rank " << me << " stuck";
    if (!moved) waitIdle(links);
  }
}

/// Channels of one peer pair are separate FIFOs: `sender[c]` and
/// `receiver[c]` are the two ends of channel c. The sender posts one message
/// per channel, the last channel first, each 100 + c bytes of value c; the
/// receiver takes channel 0's first. A message that strays into another
/// channel's FIFO shows as a wrong size (RemoteError) or wrong bytes.
inline void channelsStayApart(Links& sender, Links& receiver,
                              std::chrono::seconds limit = std::chrono::seconds(10)) {
  ASSERT_EQ(sender.size(), receiver.size());
  const auto channels = static_cast<int>(sender.size());
  for (int c = channels - 1; c >= 0; --c) {
    const size_t bytes = 100 + static_cast<size_t>(c);
    auto* slot = static_cast<uint8_t*>(sender[c]->trySendSlot(bytes));
    ASSERT_NE(slot, nullptr);
    std::memset(slot, c, bytes);
    sender[c]->commitSend(bytes);
  }
  const Deadline deadline = Deadline::after(limit);
  for (int c = 0; c < channels; ++c) {
    const size_t bytes = 100 + static_cast<size_t>(c);
    const uint8_t* data = nullptr;
    while ((data = static_cast<const uint8_t*>(receiver[c]->tryRecv(bytes))) == nullptr) {
      ASSERT_FALSE(deadline.expired()) << "channel " << c << " never delivered";
      for (auto& l : sender) l->progress();
      for (auto& l : receiver) l->progress();
      waitIdle(receiver);
    }
    for (size_t b = 0; b < bytes; ++b) ASSERT_EQ(data[b], c) << "channel " << c << " byte " << b;
    receiver[c]->releaseRecv();
  }
}

}  // namespace loom::link_traffic
