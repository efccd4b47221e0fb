// Internal to ir: the lowering class, shared by its files: lower.cpp
// (probes, statements, expressions, conditions, builtins), lower_calls.cpp
// (function calls and the records sent to user space) and lower_maps.cpp
// (map reads and writes, aggregations, memory copies).
#pragma once

#include <arpa/inet.h>
#include <fmt/format.h>
#include <linux/bpf.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <set>
#include <unordered_map>

#include "ir/builder.h"
#include "ir/ir.h"

namespace bpfscope::ir::detail {

using lang::Expr;
using lang::ExprId;
using lang::ExprKind;
using lang::kNone;
using lang::Op;
using lang::Stmt;
using lang::StmtId;
using lang::StmtKind;
using sema::Type;
using sema::TypeKind;

// A lowered value. Integers are in `reg`; strings and tuples are addressed by
// `reg` (a pointer) unless they are a literal known at compile time.
struct Val {
  VregId reg = kNoVreg;
  Type type;
  std::optional<std::string> literal;  // string literal bytes (without the NUL)
  std::optional<int64_t> constant;     // integer known at compile time
  bool local = false;  // a record copied into BPF memory (a variable): read with probe_read_kernel
};

// Copies of at most this many bytes are inlined as loads and stores; longer
// ones are one bpf_probe_read_kernel call.
constexpr uint32_t kInlineCopy = 64;

// The x86-64 argument registers (di, si, dx, cx, r8, r9) as offsets into
// struct pt_regs; further arguments are on the stack.
constexpr int32_t kArgRegs[] = {112, 104, 96, 88, 72, 64};

class Lowerer {
 public:
  Lowerer(const sema::TypedProgram& p, const Module& m, const LowerOptions& o, Function& f,
          const sema::ProgramUnit& unit, int32_t target, std::vector<HelperSite>& sites)
      : p_(p), ast_(*p.ast), m_(m), opts_(o), f_(f), b_(f), unit_(unit), target_(target), sites_(sites) {}

  void run();

  uint32_t scratch_used() const { return scratch_high_; }
  uint32_t zero_needed() const { return zero_needed_; }

  // The rest is the lowerer's working state and services. It is public for
  // the builtin functions' lowerings (src/builtins/), which are part of the
  // lowerer's work.
  void enter_scratch(int64_t fail_ret);

  void end_probe();

  uint32_t alloc(uint32_t size);
  VregId scratch_ptr(uint32_t off) { return off == 0 ? scratch_ : b_.alu_imm(AluOp::Add, scratch_, off); }

  void block(const std::vector<StmtId>& body);

  void stmt(StmtId id);

  // ---- for ($kv : @m) ----
  // The body becomes a callback subprogram for bpf_for_each_map_elem(map,
  // callback, ctx, 0), called as callback(map, key, value, ctx) per element;
  // it returns 0 to continue and 1 to stop (the verifier requires a constant
  // 0 or 1). The callback has its own registers and stack frame, so the
  // caller passes its state in a context struct on its stack:
  //   [program context pointer][probe ended flag][outer integer variables]
  // The callback loads the variables the body uses on entry and stores them
  // back on every exit; the caller reloads them after the call. Strings and
  // tuples live in the per-CPU scratch map at fixed offsets, which the
  // callback looks up again (same CPU: BPF programs do not migrate).
  static constexpr int32_t kLoopCtx = 0, kLoopEnded = 8, kLoopVars = 16;

  void for_map(const Stmt& s);

  // A range whose bounds are not constants runs its body in a bpf_loop
  // callback, callback(index, ctx), with the same context struct plus the
  // range's start after the variables.
  void for_range(const Stmt& s, VregId start, VregId stop);

  // The context struct of a loop body's callback, filled on the caller's
  // stack; `shared` are the caller's integer variables the body uses
  // (own_var, the loop's own variable, aside).
  struct LoopFrame {
    VregId cs = kNoVreg;
    std::vector<int32_t> shared;
  };
  LoopFrame open_loop_frame(const Stmt& s, int32_t own_var);
  // After the call: reloads the shared variables, and ends the probe when
  // the body did (exit(), return).
  void close_loop_frame(const LoopFrame& f);

  // `range`: a bpf_loop callback (for_range), else a for-map one.
  void lower_callback(const Stmt& s, Function& cb, uint32_t index, const std::vector<int32_t>& shared, bool range);
  void for_map_pair(const Stmt& s, VregId key, VregId value);

  void vars_in_stmt(StmtId id, std::set<int32_t>& out) const;

  void vars_in_expr(ExprId id, std::set<int32_t>& out) const;

  void assign(const Stmt& s);

  Val pointer_step(Op op, const Type& target, Val rhs);

  VregId var_reg(int32_t var);

  void assign_var(ExprId target, const Val& v);
  void mirror_var(int32_t var);
  // Sets integer variable `var` to v, truncated to its type when that is
  // narrower than 64 bits (`let $x: int8 = 127; $x++` wraps to -128).
  void set_int_var(int32_t var, const Val& v);

  uint32_t var_slot(int32_t var);

  void cond(ExprId id, BlockId t, BlockId f);
  // in_list(x, "80,443"): to t when x equals a listed value, else to f.
  void in_list(ExprId id, BlockId t, BlockId f);

  static ir::Cond compare_cond(Op op, bool is_signed);

  void string_eq(const Val& l, const Val& r, BlockId equal, BlockId differ);

  void tuple_eq(const Val& l, const Val& r, BlockId equal, BlockId differ);

  void buffer_eq(const Val& l, const Val& r, BlockId equal, BlockId differ);

  void bytes_eq(const Val& l, const Val& r, uint32_t n, BlockId equal, BlockId differ);

  void compare_bytes(VregId l, VregId r, uint32_t n, BlockId equal, BlockId differ);

  VregId materialize_int(const Val& v);

  Val int_val(VregId r, const Type& t) { return Val{.reg = r, .type = t}; }

  Val constant(int64_t c, const Type& t) { return Val{.reg = kNoVreg, .type = t, .constant = c}; }

  Val string_literal(std::string s);

  Val addressable(const Val& v);

  VregId arith(Op op, VregId a, const Val& rhs, bool is_signed);

  VregId extend(VregId r, uint32_t size, bool is_signed);

  Val expr(ExprId id);

  Val expr_inner(ExprId id, const Expr& e, const Type& t);

  Val narrow(const Val& a, const Type& t);

  VregId clamped_size(VregId len, uint32_t cap);

  Val scaled(Val n, uint32_t size);

  int64_t constant_of(ExprId id);

  static std::optional<int64_t> fold(Op op, int64_t a, int64_t b);

  Val bool_of(ExprId id);

  Val bool_of_val(const Val& v);

  VregId flag(ir::Cond c, VregId r, int64_t imm);

  const sema::AttachTarget& target() const { return unit_.targets[target_ < 0 ? 0 : target_]; }

  Val args_field(const Expr& e, const Type& t);

  Val call(ExprId id, const Expr& e, const Type& t);

  // strstr(h, n): the index of the first occurrence of n in h, or -1.
  // The haystack (and a needle that is not a short literal) are copied to
  // scratch; bpf_loop calls a callback once per start position i, which
  // compares the needle there: a short literal byte by byte as immediates,
  // else with a second bpf_loop over the needle's bytes. The verifier checks
  // each callback once, whatever the string sizes; plain loops would make it
  // walk every iteration of both. Results go through stack slots of the
  // calling frame.
  static constexpr uint32_t kUnrolledNeedle = 64;

  // The outcome of comparing one needle byte, kept in the inner loop's
  // context: the needle ended (found), the haystack ended (no match here or
  // later), or the bytes differ (try the next start).
  static constexpr int32_t kMatchFound = 1, kMatchStop = 2, kMatchNext = 3;

  Val str_search(const Expr& e);

  static int read_helper(sema::AddrSpace space, bool str);

  Val buf_val(const Expr& e, const Type& t);

  void join(const Expr& e, const sema::Action& a, int32_t action);

  // Sends an async record [action id][args] through the ring buffer, counting
  // it in the lost map when the ring buffer is full.
  // An argument of a record: an expression, evaluated straight into the
  // record where it can be, or a value already lowered.
  struct Arg {
    ExprId expr = kNone;
    Val val;
  };

  void send(int32_t action, const std::vector<Arg>& args);

  void submit(VregId rec, uint32_t size);

  uint32_t add_site(int helper, int32_t map = -1);

  void send_helper_error(uint32_t site, VregId ret);

  VregId checked_call(int helper, std::vector<VregId> args);

  // An update of script map `map`; `ptr` is the kernel map to write (from
  // map_ptr), or kNoVreg for map_ptr(map).
  void map_update(int32_t map, VregId key, VregId val, int flags, VregId ptr = kNoVreg);

  // The kernel map of script map `map` that probes write now: for a swapped
  // map (Module::swapped), the one its generation word names. An operation
  // that looks up, inserts and looks up again uses one pointer throughout.
  VregId map_ptr(uint32_t map);

  // ---- maps ----
  const sema::MapInfo& map_info(ExprId id) const { return p_.maps[p_.map_of[id]]; }

  VregId map_key(ExprId id);

  // A read in an expression: with -k, a missing element is reported.
  Val map_read(ExprId id, bool report_missing = false) { return map_read_key(id, map_key(id), report_missing); }

  Val map_read_key(ExprId id, VregId key, bool report_missing = false);

  Val aggregate_read(ExprId id, VregId key);

  void map_write(ExprId id, const Val& v) { map_write_key(id, map_key(id), v); }

  void map_write_key(ExprId id, VregId key, const Val& v);

  std::pair<VregId, BlockId> map_entry(ExprId id, VregId key);

  void aggregate(ExprId target, ExprId call_id);

  static ir::Cond extreme_cond(output::AggKind kind, bool is_signed);
  void tseries_record(VregId ptr, VregId v, const output::TSeriesParams& p, bool is_signed);

  void keep_extreme(VregId ptr, int32_t off, VregId v, ir::Cond better);

  void bucket_add(VregId ptr, VregId idx, uint32_t count);

  VregId hist_index(VregId v, int bits, bool is_signed);

  VregId lhist_index(VregId v, const output::HistParams& h, bool is_signed);

  Val inc_dec(const Expr& e, const Type& t);

  Val usdt_arg(const sema::UsdtArg& a, const Type& t);

  Val stack_val(const Type& t);
  void note_ustack_pid(VregId tgid);

  Val read_kernel_field(VregId base, const sema::FieldAccess& f, const Type& t);

  Val read_memory(VregId base, const sema::FieldAccess& f, const Type& t, sema::AddrSpace space);

  // `field`: dst + off is a field of a tuple, written with the field's own
  // size (Type::field_size()) rather than its size on its own (mem_size()).
  void store_expr(VregId dst, uint32_t off, ExprId id, const Type& to, bool field = false);

  void copy_to(VregId dst, uint32_t off, const Val& v, const Type& to, bool field = false);

  // An integer field of a tuple at base + off, extended to 64 bits.
  VregId load_field(VregId base, uint32_t off, const Type& el);

  Val tuple_elem(const Val& tuple, size_t i);

  void copy_bytes(VregId dst, uint32_t off, VregId src, uint32_t n);
  // Exactly n bytes (copy_bytes and zero() round n up to 8).
  void copy_exact(VregId dst, uint32_t off, VregId src, uint32_t n);
  void zero_exact(VregId dst, uint32_t off, uint32_t n);

  void zero(VregId dst, uint32_t off, uint32_t n);

  VregId array_elem(uint32_t map, uint32_t index);

  const sema::TypedProgram& p_;
  const lang::Program& ast_;
  const Module& m_;
  const LowerOptions& opts_;
  Function& f_;
  Builder b_;
  const sema::ProgramUnit& unit_;
  int32_t target_;
  std::vector<HelperSite>& sites_;
  VregId ctx_ = kNoVreg;
  VregId scratch_ = kNoVreg;
  int32_t key_slot_ = 0;
  uint32_t scratch_top_ = 0;
  uint32_t scratch_high_ = 8;
  uint32_t vars_top_ = 0;
  uint32_t zero_needed_ = 8;
  struct Loop {
    BlockId next;  // continue
    BlockId exit;  // break
  };
  std::vector<Loop> loops_;
  struct VarSlot {
    VregId reg = kNoVreg;
    bool has_mem = false;
    uint32_t off = 0;
  };
  std::unordered_map<int32_t, VarSlot> vars_;
  // Inside a for-map body: the callback's context pointer and the block
  // that stops the iteration (return 1).
  struct Callback {
    VregId ctx;
    BlockId stop;
  };
  const Callback* callback_ = nullptr;
  std::deque<Function> subprograms_;  // by index (FuncAddr); a deque keeps references stable

  // The per-function state of the function being lowered, while a callback
  // subprogram is built (for-map bodies, bpf_loop callbacks).
  struct CallerState {
    Function* caller;
    BlockId resume;
    lang::Loc loc;
    std::unordered_map<int32_t, VarSlot> vars;
    std::vector<Loop> loops;
    VregId ctx, scratch;
    int32_t key_slot;
    const Callback* callback;
  };

  CallerState begin_callback(Function& cb, std::string_view what, uint32_t index);

  void end_callback(CallerState& st);
};

}  // namespace bpfscope::ir::detail
