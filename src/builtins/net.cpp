#include "builtins/common.h"

namespace bpfscope::builtins {
namespace {

// The argument of fn is a pointer to the kernel's struct `name`, and the
// probes give it typed (BTF): the helpers that take a socket or an sk_buff
// (bpf_get_socket_cookie, bpf_skb_output) exist only for tracing programs,
// whose arguments the verifier knows the types of.
bool typed_kernel_pointer(Checker& c, const Expr& e, ExprId arg, std::string_view name) {
  Type t = c.expr(arg);
  if (!t.is_pointer || t.btf_id == 0 || t.btf_id != c.out_.btf->find_struct(name)) {
    c.error(c.ast_.expr(arg).loc, fmt::format("{}() expects a struct {} pointer ({} provided)", e.name, name, t.name()));
    return false;
  }
  for (const auto& p : *c.points_) {
    if (p.kind != ProbeKind::RawTracepoint && p.kind != ProbeKind::Fentry && p.kind != ProbeKind::Fexit) {
      c.error(e.loc, fmt::format("{}() needs a {} the kernel typed, which only rawtracepoint (tp_btf) and "
                                 "fentry/fexit probes give; it can not be used with \"{}\" probes",
                                 e.name, name == "sock" ? "socket" : name, c.probe_type_name(p.kind)));
      return false;
    }
  }
  return true;
}

constexpr Function kNet[] = {
    {.name = "ntop",
     .min_args = 1,
     .max_args = 3,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       // ntop([af,] addr): an IPv4 address as an integer (network order) or
       // 4 bytes, an IPv6 address as 16 bytes. ntop(af, addr, port), a
       // bpfscope extension, prints "addr:port" ("[addr]:port" for IPv6).
       const ExprId addr_id = e.args.size() == 3 ? e.args[1] : e.args.back();
       Type addr = c.expr(addr_id);
       if (e.args.size() >= 2 && !c.expr(e.args[0]).is_int()) {
         c.error(c.ast_.expr(e.args[0]).loc, "ntop(): the address family must be an integer");
         return Type::none();
       }
       if (e.args.size() == 3 && !c.expr(e.args[2]).is_int()) {
         c.error(c.ast_.expr(e.args[2]).loc, "ntop(): the port must be an integer");
         return Type::none();
       }
       bool ok =
           (addr.kind == TypeKind::Int && addr.size <= 8) || (addr.is_bytes() && (addr.size == 4 || addr.size == 16));
       if (!ok) {
         c.error(c.ast_.expr(addr_id).loc,
                 fmt::format("ntop() expects an integer, or 4 or 16 bytes ({} provided)", addr.name()));
         return Type::none();
       }
       return Type::inet();
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       // [u64 family, with a port: | port << 32 | 1 << 48][16 address bytes]
       uint32_t off = l.alloc(24);
       VregId rec = l.scratch_ptr(off);
       const ExprId addr_id = e.args.size() == 3 ? e.args[1] : e.args.back();
       const Type& at = l.p_.type_of(addr_id);
       int64_t family = at.is_bytes() && at.size == 16 ? 10 : 2;  // AF_INET6 : AF_INET
       if (e.args.size() == 3) {
         VregId port = l.b_.alu_imm(AluOp::And, l.materialize_int(l.expr(e.args[2])), 0xffff);
         VregId word = l.b_.alu_imm(AluOp::Lsh, port, 32);
         VregId af = l.b_.alu_imm(AluOp::And, l.materialize_int(l.expr(e.args[0])), 0xffff);
         word = l.b_.alu(AluOp::Or, word, af);
         l.b_.store(8, rec, 0, word);
         l.b_.store_imm(1, rec, 6, 1);  // bit 48: has a port
       } else if (e.args.size() == 2) {
         l.copy_to(rec, 0, l.expr(e.args[0]), Type::integer(8, false));
       } else {
         l.b_.store_imm(8, rec, 0, static_cast<int32_t>(family));
       }
       Val addr = l.expr(addr_id);
       if (at.is_bytes()) {
         addr = l.addressable(addr);
         l.copy_bytes(rec, 8, addr.reg, at.size == 16 ? 16 : 8);
         if (at.size == 4) l.b_.store_imm(4, rec, 12, 0);
         if (at.size == 4) l.b_.store_imm(8, rec, 16, 0);
       } else {
         // The integer holds the address in network order in its low bytes.
         l.b_.store(4, rec, 8, l.materialize_int(addr));
         l.b_.store_imm(4, rec, 12, 0);
         l.b_.store_imm(8, rec, 16, 0);
       }
       return Val{.reg = rec, .type = t};
     }},
    // pton("1.2.3.4") / pton("::1"): the address bytes, as uint8[4] or
    // uint8[16], parsed here (from any string known when compiling: a literal,
    // a string getopt(), $1); lowering writes them as a literal
    // (const_strings[const_of[id]]).
    {.name = "pton",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       c.expr(e.args[0]);
       const std::optional<std::string> text = c.const_string(e.args[0]);
       if (!text) {
         c.error(e.loc, fmt::format("pton() expects a string literal ({} provided)", c.provided(e.args[0])));
         return Type::none();
       }
       unsigned char bytes[16];
       uint32_t n = 0;
       if (inet_pton(AF_INET, text->c_str(), bytes) == 1)
         n = 4;
       else if (inet_pton(AF_INET6, text->c_str(), bytes) == 1)
         n = 16;
       if (!n) {
         c.error(e.loc, fmt::format("pton() expects a valid IPv4/IPv6 address, got {}", *text));
         return Type::none();
       }
       c.out_.const_of[id] = static_cast<int64_t>(c.out_.const_strings.size());
       c.out_.const_strings.emplace_back(reinterpret_cast<char*>(bytes), n);
       return Type::array(Type::integer(1, false), n);
     },
     .lower = [](Lowerer& l, ExprId id, const Expr& /*e*/, const Type& t) -> Val {
       // The bytes sema parsed, as a literal.
       return Val{.reg = kNoVreg,
                  .type = t,
                  .literal = l.p_.const_strings[static_cast<size_t>(l.p_.const_of[id].value_or(0))]};
     }},
    {.name = "macaddr",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       const Expr& a = c.ast_.expr(e.args[0]);
       Type t = c.expr(e.args[0]);
       if (a.kind == ExprKind::String) {
         c.error(e.loc, "macaddr() does not support literal string arguments");
         return Type::none();
       }
       if (t.is_bytes()) {
         if (t.size * (t.kind == TypeKind::Array ? t.elems[0].size : 1) != 6) {
           c.error(e.loc, "macaddr() argument must be 6 bytes in size");
           return Type::none();
         }
       } else if (t.kind != TypeKind::Int) {
         c.error(e.loc, fmt::format("macaddr() expects an array or a pointer ({} provided)", t.name()));
         return Type::none();
       }
       return Type::mac_addr();
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       VregId rec = l.scratch_ptr(l.alloc(8));
       Val src = l.expr(e.args[0]);
       if (src.type.is_bytes()) {
         src = l.addressable(src);
         l.copy_bytes(rec, 0, src.reg, 8);
         l.b_.store_imm(2, rec, 6, 0);
       } else {
         l.b_.store_imm(8, rec, 0, 0);
         l.checked_call(l.read_helper(src.type.addr_space, false), {rec, l.b_.imm(6), l.materialize_int(src)});
       }
       return Val{.reg = rec, .type = t};
     }},
    {.name = "bswap",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       Type t = c.expr(e.args[0]);
       if (t.kind != TypeKind::Int) {
         c.error(c.ast_.expr(e.args[0]).loc, fmt::format("bswap() expects an integer ({} provided)", t.name()));
         return Type::none();
       }
       return Type::integer(t.size, false);
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       Val a = l.expr(e.args[0]);
       const Type& at = l.p_.type_of(e.args[0]);
       if (at.size == 1) return l.int_val(l.materialize_int(a), t);  // one byte: nothing to swap
       VregId r = l.b_.alu_imm(AluOp::Bswap, l.materialize_int(a), at.size * 8);
       return l.int_val(r, t);
     }},
    // socket_cookie(sk): bpf_get_socket_cookie of a struct sock the kernel
    // typed (a tp_btf or fentry argument); 0 for NULL.
    {.name = "socket_cookie",
     .min_args = 1,
     .max_args = 1,
     .check = [](Checker& c, ExprId /*id*/, const Expr& e) -> Type {
       if (!typed_kernel_pointer(c, e, e.args[0], "sock")) return Type::none();
       return Type::integer(8, false);
     },
     .lower = [](Lowerer& l, ExprId /*id*/, const Expr& e, const Type& t) -> Val {
       return l.int_val(l.b_.call(BPF_FUNC_get_socket_cookie, {l.materialize_int(l.expr(e.args[0]))}), t);
     }},
    // skboutput(path, skb, len, offset): the first len bytes of the
    // sk_buff's data (bpf_skb_output, through a perf event array) as a
    // packet of the pcap file `path` (raw IP), offset bytes skipped.
    {.name = "skboutput",
     .min_args = 4,
     .max_args = 4,
     .check = [](Checker& c, ExprId id, const Expr& e) -> Type {
       const std::optional<std::string> path = c.known_string_arg(id, "skboutput");
       if (!path) return Type::none();
       if (!typed_kernel_pointer(c, e, e.args[1], "sk_buff")) return Type::none();
       if (!c.expr(e.args[2]).is_int()) {
         c.error(c.ast_.expr(e.args[2]).loc, "skboutput(): the length must be an integer");
         return Type::none();
       }
       c.expr(e.args[3]);
       auto offset = c.constant(e.args[3]);
       if (!offset || *offset < 0) {
         c.error(c.ast_.expr(e.args[3]).loc, "skboutput(): the offset must be a non-negative integer literal");
         return Type::none();
       }
       auto& files = c.out_.skboutput_files;
       auto file = std::find(files.begin(), files.end(), *path) - files.begin();
       if (file == static_cast<ptrdiff_t>(files.size())) files.push_back(*path);
       c.out_.const_of[id] = static_cast<int64_t>(c.out_.skboutputs.size());
       c.out_.skboutputs.push_back({static_cast<uint32_t>(file), static_cast<uint64_t>(*offset)});
       return Type::integer(4, false);
     },
     .lower = [](Lowerer& l, ExprId id, const Expr& e, const Type& t) -> Val {
       // The sample's header (runtime/packets.h): [u64 call][u64 boot-clock
       // ns][u64 bytes]; the packet's bytes follow it.
       VregId skb = l.materialize_int(l.expr(e.args[1]));
       VregId len = l.materialize_int(l.expr(e.args[2]));
       VregId hdr = l.scratch_ptr(l.alloc(24));
       l.b_.store(8, hdr, 0, l.b_.imm(*l.p_.const_of[id]));
       l.b_.store(8, hdr, 8, l.b_.call(BPF_FUNC_ktime_get_boot_ns, {}));
       l.b_.store(8, hdr, 16, len);
       // flags: BPF_F_CURRENT_CPU, and the bytes to copy in the upper half.
       VregId flags = l.b_.alu_imm(AluOp::Lsh, len, 32);
       flags = l.b_.alu_imm(AluOp::Or, flags, 0xffffffff);
       VregId r = l.b_.call(BPF_FUNC_skb_output, {skb, l.b_.map_fd(l.m_.support.skb_output), flags, hdr, l.b_.imm(24)});
       return l.int_val(r, t);
     }},
};

}  // namespace

std::span<const Function> net() { return kNet; }

}  // namespace bpfscope::builtins
