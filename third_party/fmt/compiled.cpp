// fmt's implementation, compiled once for the whole project. Every other file includes fmt's
// headers without FMT_HEADER_ONLY and so sees only declarations: the floating-point tables and
// the formatting engine (fmt/format-inl.h) are compiled here, not in each of the files that
// format (issue 35: each paid about N s for them). Debian ships fmt as libfmt.so only, and the
// release tarball carries no new shared library for it: the library built from this file is
// static (CMakeLists.txt, gpuclean_fmt).
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
// The templates that fmt/format.h declares `extern template` outside a header-only build, and
// the others that the formatting code calls for char; wchar_t is never formatted here.
template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl(locale_ref) -> char;
}  // namespace detail
FMT_END_NAMESPACE
