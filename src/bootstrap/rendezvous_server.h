// The rendezvous server's event loop (internal to bootstrap; startRendezvous in
// bootstrap.h is the public entry). One thread owns one RendezvousServer.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/peer_status.h"
#include "bootstrap/rendezvous_protocol.h"
#include "bootstrap/shrink_agreement.h"
#include "core/socket.h"

namespace loom {

class RendezvousServer {
 public:
  /// Takes the listening socket. Admits clients that prove `secret` and name
  /// `job`. `joinTimeout` bounds how long the server waits for a complete set
  /// of ranks before closing everything.
  RendezvousServer(Socket listener, std::array<uint8_t, 16> secret, uint64_t job,
                   std::chrono::milliseconds joinTimeout);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  /// The poll loop; returns when every joined rank has disconnected, or when
  /// the ranks did not all join within the join timeout. Never throws.
  void run();

 private:
  struct Client;

  void acceptPending();
  void readFrom(Client& client);
  void writeTo(Client& client);
  void onHello(Client& client, const rendezvous::Hello& hello);
  void onBlob(Client& client, std::string blob);
  void onLeave(Client& client, const std::string& why);
  void onStatus(Client& client, const PeerStatus& status);
  void onQuery(Client& client);
  void onRevoke(Client& client, const std::string& why);
  void onShrink(Client& client, std::string_view payload);
  void decideShrinkIfReady();
  uint16_t startSurvivorsRendezvous(const ShrinkSalt& salt);
  void answerWithError(Client& client, const std::string& message);
  void completeRoundIfReady();
  void refuse(Client& client, const std::string& message);
  void drop(Client& client, const std::string& why, bool warn);
  void enqueue(Client& client, std::shared_ptr<const std::string> frame);
  void loopOnce();

  Socket listener_;
  std::string address_;
  std::string bindHost_;  // where a shrink's new rendezvous listens too
  std::array<uint8_t, 16> secret_;
  uint64_t job_;
  std::chrono::milliseconds joinTimeout_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<Client*> byRank_;  // joined clients, indexed by rank
  int nranks_ = 0;               // 0 until the first valid hello
  int joined_ = 0;               // live entries of byRank_
  bool allJoined_ = false;
  // Set when a joined rank disconnected without leave(): every round fails.
  std::string failure_;
  // Set when a rank left cleanly: later rounds cannot complete, so they fail.
  std::string departed_;
  int revokedBy_ = -1;                     // the first rank that revoked; told to every rank once
  std::optional<ShrinkAgreement> shrink_;  // once all ranks joined
};

}  // namespace loom
