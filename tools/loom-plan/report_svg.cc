#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>

#include "core/error.h"
#include "report.h"

namespace loom::plan {
namespace {

struct Part {
  const char* name;
  const char* color;
  double Prediction::*seconds;
};

constexpr std::array<Part, 5> kParts = {{
    {"compute", "#4e79a7", &Prediction::computeSeconds},
    {"TP comm", "#f28e2b", &Prediction::tpSeconds},
    {"bubble", "#bab0ac", &Prediction::bubbleSeconds},
    {"PP comm", "#59a14f", &Prediction::ppSeconds},
    {"DP comm", "#e15759", &Prediction::dpSeconds},
}};

}  // namespace

void writeSvg(const std::string& path, const PlanResult& plan, int top) {
  std::vector<const Prediction*> rows;
  for (const Prediction& p : plan.ranked) {
    if (p.fits && static_cast<int>(rows.size()) < top) rows.push_back(&p);
  }
  constexpr int kLabelWidth = 230, kBarWidth = 560, kRowHeight = 22, kTop = 50;
  const int height = kTop + static_cast<int>(rows.size()) * kRowHeight + 40;
  double longest = 0;
  for (const Prediction* p : rows) longest = std::max(longest, p->stepSeconds);
  std::ofstream out(path);
  if (!out) raise(ErrorCode::SystemError, "--svg: cannot write '{}'", path);
  out << fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      kLabelWidth + kBarWidth + 90, height);
  out << fmt::format(
      "<text x=\"10\" y=\"20\" font-size=\"14\">{}: predicted step time on {} GPUs (fitting "
      "layouts, best first)</text>\n",
      plan.model.name, plan.gpus);
  int x = 10;
  for (const Part& part : kParts) {
    out << fmt::format(
        "<rect x=\"{}\" y=\"30\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" "
        "y=\"39\">{}</text>\n",
        x, part.color, x + 14, part.name);
    x += 90;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const Prediction& p = *rows[i];
    const int y = kTop + static_cast<int>(i) * kRowHeight;
    out << fmt::format("<text x=\"10\" y=\"{}\">{}</text>\n", y + 15, p.layout.label());
    double start = 0;
    for (const Part& part : kParts) {
      const double width = longest > 0 ? p.*part.seconds / longest * kBarWidth : 0;
      out << fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"16\" fill=\"{}\"><title>{} "
          "{:.4g} s</title></rect>\n",
          kLabelWidth + start, y + 3, width, part.color, part.name, p.*part.seconds);
      start += width;
    }
    out << fmt::format("<text x=\"{:.1f}\" y=\"{}\">{:.4g} s</text>\n", kLabelWidth + start + 4,
                       y + 15, p.stepSeconds);
  }
  out << "</svg>\n";
  if (!out) raise(ErrorCode::SystemError, "--svg: writing '{}' failed", path);
}

}  // namespace loom::plan
