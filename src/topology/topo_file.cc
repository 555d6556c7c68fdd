// Loading topology files. The schema is in docs/topology.md: a flat list of
// node elements (their tag is the node kind) and <link> elements under one
// <loom_topology> root. Flat rather than nested so that any node order — node
// order is GPU order — survives a save/load round trip.
#include "topology/topo_file.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <pugixml.hpp>
#include <sstream>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "topology/topo_file_schema.h"

namespace loom::topo {
namespace {

constexpr size_t kMaxBytes = size_t{64} << 20;
constexpr size_t kMaxElements = 1'000'000;

// Byte offset -> 1-based line, by binary search over line starts.
class LineIndex {
 public:
  explicit LineIndex(const std::string& text) {
    starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') starts_.push_back(i + 1);
    }
  }
  int lineOf(ptrdiff_t offset) const {
    if (offset < 0) return 0;
    const auto it = std::upper_bound(starts_.begin(), starts_.end(), static_cast<size_t>(offset));
    return static_cast<int>(it - starts_.begin());
  }

 private:
  std::vector<size_t> starts_;
};

class Parser {
 public:
  Parser(const std::string& text, const std::string& sourceName)
      : text_(text), name_(sourceName), lines_(text) {}

  Topology parse() {
    if (text_.size() > kMaxBytes) {
      fail(0, "document",
           fmt::format("{} bytes is over the {} MiB limit", text_.size(), kMaxBytes >> 20));
    }
    pugi::xml_document doc;
    const pugi::xml_parse_result parsed =
        doc.load_buffer(text_.data(), text_.size(), pugi::parse_default, pugi::encoding_utf8);
    if (!parsed)
      fail(parsed.offset, "document", fmt::format("XML error: {}", parsed.description()));
    const pugi::xml_node root = readRoot(doc);
    const std::vector<pugi::xml_node> elements = readChildren(root);
    for (const pugi::xml_node& e : elements) {
      if (std::string_view(e.name()) != kLinkElement) declareNode(e);
    }
    for (const pugi::xml_node& e : elements) {
      if (std::string_view(e.name()) == kLinkElement) {
        readLink(e);
      } else {
        resolveHost(e);
      }
    }
    if (auto problem = findTopologyProblem(topology_)) {
      const pugi::xml_node& e =
          problem->link >= 0 ? linkElements_[problem->link] : nodeElements_[problem->node];
      fail(e, problem->message);
    }
    return std::move(topology_);
  }

 private:
  [[noreturn]] void fail(ptrdiff_t offset, std::string_view element, const std::string& problem) {
    raise(ErrorCode::InvalidArgument, "{}:{}: {}: {}", name_, std::max(1, lines_.lineOf(offset)),
          element, problem);
  }
  [[noreturn]] void fail(const pugi::xml_node& e, const std::string& problem) {
    fail(e.offset_debug(), describe(e), problem);
  }

  // "<gpu id="h/gpu0">", "<link a="x" b="y">": enough to find it by eye.
  static std::string describe(const pugi::xml_node& e) {
    std::string out = fmt::format("<{}", e.name());
    for (const char* key : {"id", "a", "b"}) {
      if (const pugi::xml_attribute a = e.attribute(key)) {
        out += fmt::format(" {}=\"{}\"", key, a.value());
      }
    }
    return out + ">";
  }

  pugi::xml_node readRoot(const pugi::xml_document& doc) {
    pugi::xml_node root;
    for (const pugi::xml_node& child : doc.children()) {
      if (child.type() != pugi::node_element) continue;
      if (root) fail(child, fmt::format("a second root element; expected one <{}>", kRootElement));
      root = child;
    }
    if (!root) fail(0, "document", fmt::format("no <{}> root element", kRootElement));
    if (std::string_view(root.name()) != kRootElement) {
      fail(root, fmt::format("root element must be <{}>", kRootElement));
    }
    checkAttributes(root, {kVersionAttr, kSourceAttr});
    const pugi::xml_attribute version = root.attribute(kVersionAttr);
    if (!version) fail(root, fmt::format("missing attribute '{}'", kVersionAttr));
    if (std::string_view(version.value()) != kFormatVersion) {
      fail(root, fmt::format("version '{}' is not supported (this reader knows '{}')",
                             version.value(), kFormatVersion));
    }
    topology_.source = root.attribute(kSourceAttr).value();
    return root;
  }

  std::vector<pugi::xml_node> readChildren(const pugi::xml_node& root) {
    std::vector<pugi::xml_node> elements;
    for (const pugi::xml_node& child : root.children()) {
      if (child.type() != pugi::node_element) {
        if (child.type() == pugi::node_pcdata || child.type() == pugi::node_cdata) {
          fail(child.offset_debug(), describe(root), "unexpected text inside it");
        }
        continue;
      }
      if (elements.size() == kMaxElements) {
        fail(child, fmt::format("more than {} elements; refusing the file", kMaxElements));
      }
      if (child.first_child()) fail(child, "must be empty (no child elements or text)");
      elements.push_back(child);
    }
    return elements;
  }

  void checkAttributes(const pugi::xml_node& e, std::initializer_list<const char*> allowed) {
    std::unordered_set<std::string_view> seen;
    for (const pugi::xml_attribute& a : e.attributes()) {
      const std::string_view key = a.name();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string known;
        for (const char* k : allowed) known += fmt::format("{}{}", known.empty() ? "" : ", ", k);
        fail(e, fmt::format("unknown attribute '{}' (allowed: {})", key, known));
      }
      if (!seen.insert(key).second) fail(e, fmt::format("attribute '{}' given twice", key));
    }
  }

  const char* required(const pugi::xml_node& e, const char* key) {
    const pugi::xml_attribute a = e.attribute(key);
    if (!a) fail(e, fmt::format("missing attribute '{}'", key));
    return a.value();
  }

  /// The attribute as a number of type T (an int, or a finite double), or
  /// `fallback` when it is absent.
  template <typename T>
  T numberAttr(const pugi::xml_node& e, const char* key, T fallback) {
    const pugi::xml_attribute a = e.attribute(key);
    if (!a) return fallback;
    const std::string_view text = a.value();
    T value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
      fail(e, fmt::format("{}='{}' is not {}", key, text,
                          std::is_integral_v<T> ? "an integer" : "a finite number"));
    }
    return value;
  }

  void declareNode(const pugi::xml_node& e) {
    const std::optional<NodeKind> kind = nodeKindFromName(e.name());
    if (!kind) {
      fail(e, fmt::format("unknown element (expected host, cpu, pci, gpu, nic, nvswitch, "
                          "fabric or {})",
                          kLinkElement));
    }
    const bool global = *kind == NodeKind::Host || *kind == NodeKind::Fabric;
    if (global) {
      checkAttributes(e, {kIdAttr, kNameAttr});
    } else {
      checkAttributes(e,
                      {kIdAttr, kHostAttr, kNameAttr, kBusAttr, kNumaAttr, kCoresAttr, kRankAttr});
    }
    Node node;
    node.kind = *kind;
    node.id = required(e, kIdAttr);
    if (node.id.empty()) fail(e, "id is empty");
    node.name = e.attribute(kNameAttr).value();
    node.busId = e.attribute(kBusAttr).value();
    node.numa = numberAttr<int>(e, kNumaAttr, -1);
    node.cores = numberAttr<int>(e, kCoresAttr, 0);
    node.rank = numberAttr<int>(e, kRankAttr, -1);
    if (auto [it, fresh] = ids_.emplace(node.id, static_cast<int>(topology_.nodes.size()));
        !fresh) {
      fail(e, fmt::format("id '{}' is already used at line {}", node.id,
                          lines_.lineOf(nodeElements_[it->second].offset_debug())));
    }
    // An nvswitch without a host is shared by several (an NVLink domain).
    if (!global && *kind != NodeKind::NvSwitch) required(e, kHostAttr);
    topology_.addNode(std::move(node));
    nodeElements_.push_back(e);
  }

  int resolve(const pugi::xml_node& e, const char* key) {
    const char* id = required(e, key);
    const auto it = ids_.find(id);
    if (it == ids_.end()) fail(e, fmt::format("{}='{}' names no node in this file", key, id));
    return it->second;
  }

  void resolveHost(const pugi::xml_node& e) {
    if (!e.attribute(kHostAttr)) return;
    const int host = resolve(e, kHostAttr);
    if (topology_.nodes[host].kind != NodeKind::Host) {
      fail(e, fmt::format("host='{}' is a <{}>, not a <host>", topology_.nodes[host].id,
                          nodeKindName(topology_.nodes[host].kind)));
    }
    topology_.nodes[ids_.at(e.attribute(kIdAttr).value())].host = host;
  }

  void readLink(const pugi::xml_node& e) {
    checkAttributes(e, {kLinkA, kLinkB, kKindAttr, kBandwidthAttr, kLatencyAttr, kLanesAttr,
                        kGenerationAttr, kBridgeAttr});
    Link link;
    link.a = resolve(e, kLinkA);
    link.b = resolve(e, kLinkB);
    const char* kindName = required(e, kKindAttr);
    const std::optional<LinkKind> kind = linkKindFromName(kindName);
    if (!kind) {
      fail(e, fmt::format(
                  "unknown link kind '{}' (expected host, smp, pcie, nvlink, net or nvlink-c2c)",
                  kindName));
    }
    link.kind = *kind;
    required(e, kBandwidthAttr);
    link.bandwidth = numberAttr<double>(e, kBandwidthAttr, 0.0);
    link.latency = numberAttr<double>(e, kLatencyAttr, 0.0);
    link.lanes = numberAttr<int>(e, kLanesAttr, 1);
    link.generation = numberAttr<int>(e, kGenerationAttr, 0);
    link.bridge = e.attribute(kBridgeAttr).value();
    topology_.addLink(link);
    linkElements_.push_back(e);
  }

  const std::string& text_;
  const std::string& name_;
  LineIndex lines_;
  Topology topology_;
  std::unordered_map<std::string, int> ids_;
  std::vector<pugi::xml_node> nodeElements_;
  std::vector<pugi::xml_node> linkElements_;
};

}  // namespace

Topology parseTopologyXml(const std::string& text, const std::string& sourceName) {
  return Parser(text, sourceName).parse();
}

Topology loadTopologyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) raise(ErrorCode::InvalidArgument, "topology file '{}' cannot be opened", path);
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) raise(ErrorCode::InvalidArgument, "topology file '{}' cannot be read", path);
  if (static_cast<size_t>(size) > kMaxBytes) {
    raise(ErrorCode::InvalidArgument, "{}:1: document: {} bytes is over the {} MiB limit", path,
          size, kMaxBytes >> 20);
  }
  in.seekg(0);
  std::string text(static_cast<size_t>(size), '\0');
  if (!in.read(text.data(), size)) {
    raise(ErrorCode::InvalidArgument, "topology file '{}' cannot be read", path);
  }
  return parseTopologyXml(text, path);
}

}  // namespace loom::topo
