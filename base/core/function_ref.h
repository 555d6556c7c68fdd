// A reference to a callable for the length of one call. Unlike std::function it
// owns nothing and never allocates, however much the callable captures: a
// wait's "what are we waiting for" text is built only when an error needs it,
// but a std::function holding a lambda of three references costs a malloc and
// a free on every wait that reaches the idle loop.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace loom {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  /// Refers to `f`, a callable object (a lambda, a functor), which must outlive
  /// every call through this reference (a lambda passed as an argument lives
  /// until the call returns).
  template <typename F,
            typename = std::enable_if_t<std::is_object_v<std::remove_reference_t<F>> &&
                                        !std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
                                        std::is_invocable_r_v<R, F&, Args...>>>
  FunctionRef(F&& f)  // implicit: it stands wherever the callable would
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return std::invoke(*static_cast<std::remove_reference_t<F>*>(object),
                             std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace loom
