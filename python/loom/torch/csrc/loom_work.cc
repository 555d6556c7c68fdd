#include "loom_work.h"

namespace loom::torch_backend {

LoomWork::LoomWork(std::vector<at::Tensor> result, c10d::OpType type)
    : Work(-1, type),
      result_(std::move(result)),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
}

void LoomWork::complete(std::exception_ptr error) {
  finish(error);
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(result_));
  }
}

bool LoomWork::isCompleted() {
  runBeforeWait();
  return Work::isCompleted();
}

bool LoomWork::isSuccess() const { return Work::isSuccess(); }

bool LoomWork::wait(std::chrono::milliseconds timeout) {
  runBeforeWait();
  return Work::wait(timeout);
}

c10::intrusive_ptr<c10::ivalue::Future> LoomWork::getFuture() {
  runBeforeWait();  // a future nobody could complete would be a hang
  return future_;
}

c10::intrusive_ptr<c10d::Work> done(std::vector<at::Tensor> result, c10d::OpType type) {
  auto work = c10::make_intrusive<LoomWork>(std::move(result), type);
  work->complete();
  return work;
}

}  // namespace loom::torch_backend
