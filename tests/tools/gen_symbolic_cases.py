#!/usr/bin/env python3
"""Generate tests/data/symbolic_cases.txt: symbolic simplification cases with tinygrad's expected results.

Usage (runs the reference tinygrad as pure Python):
  TINYGRAD_PATH=/work/ref /usr/bin/python3 tests/tools/gen_symbolic_cases.py          # (re)write the case file
  TINYGRAD_PATH=/work/ref /usr/bin/python3 tests/tools/gen_symbolic_cases.py --check  # regenerate to a temp file, diff

Output format, one case per line, fields separated by " | " ('#' lines are comments / section markers):
  mode | vars | expr | tinygrad_render | tinygrad_nodes
    mode    symbolic: expr.simplify()   (graph_rewrite with tinygrad.uop.symbolic.symbolic)
            sym:      graph_rewrite(expr, tinygrad.uop.symbolic.sym)
            valid:    expr is "VALID => EXPR", result is uop_given_valid(VALID, EXPR)
    vars    space separated "name=var(lo,hi)" (UOp.variable, weakint) or "rN=range(end,N)" (UOp.range), "-" if none
    expr    python expression over the vars: int literals, True/False, + - * // % < > <= >= & | ^, unary -,
            parentheses, .where(a,b) .maximum(b) .minimum(b) .ne(b) .eq(b) .logical_not() .valid(cond)
    tinygrad_render  result.render(simplify=False)
    tinygrad_nodes   len(result.toposort())

Every case is self-checked: the original and tinygrad's result are evaluated node by node (no simplification) at
random points (exhaustively when the domain is small) and must agree; for `valid` only points where VALID holds count.
Cases that tinygrad gets wrong, or that raise, are left out of the data and listed as '# DROPPED' comment lines.
"""
from __future__ import annotations
import os, sys, re, ast, random, zlib, argparse, tempfile, difflib, time, itertools

TINYGRAD_PATH = os.environ.get("TINYGRAD_PATH", "/work/ref")
sys.path.insert(0, TINYGRAD_PATH)

from tinygrad.uop.ops import UOp, Ops, graph_rewrite, python_alu  # noqa: E402
from tinygrad.uop.symbolic import sym, symbolic, uop_given_valid  # noqa: E402
from tinygrad.dtype import Invalid, dtypes  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# the tinygrad commit the committed case file was generated against (stated in its header; update when moving)
REFERENCE_COMMIT = os.environ.get("TINYGRAD_COMMIT", "a9069c177a")
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "data", "symbolic_cases.txt"))

# ******************************************************************************************************************
# the cases: (family, [(mode, vars, expr), ...]). Expressions marked "ref:" come from tinygrad's test suite
# (test/null/test_uop_symbolic.py, test/null/test_simplify_valid_idx.py); the others are written for this suite.
# ******************************************************************************************************************

S, Y, V = "symbolic", "sym", "valid"

CASES: list[tuple[str, list[tuple[str, str, str]]]] = [
("constant folding", [
  (S, "a=var(0,10)", "a*0+3*4"),
  (S, "a=var(0,10)", "(a*0+3)*4"),
  (S, "a=var(0,10)", "(a*0+7)//2"),
  (S, "a=var(0,10)", "(a*0+7)%3"),
  (S, "a=var(0,10)", "(a*0-7)//2"),
  (S, "a=var(0,10)", "(a*0-7)%3"),
  (S, "a=var(0,10)", "(a*0+7)//-2"),
  (S, "a=var(0,10)", "(a*0+7)%-3"),
  (S, "a=var(0,10)", "(a-a+5)<3"),
  (S, "a=var(0,10)", "(a*0+5).ne(5)"),
  (S, "a=var(0,10)", "(a*0+5).maximum(9)"),
  (S, "a=var(0,10)", "(a*0+2).minimum(-4)"),
  (S, "a=var(0,10)", "(a*0+6)^3"),
  (S, "a=var(0,10)", "(a*0+6)&3"),
  (S, "a=var(0,10)", "(a*0+6)|3"),
  (S, "a=var(0,10)", "-(a*0+6)"),
  (S, "a=var(0,10)", "a+3+4"),
  (S, "a=var(0,10)", "a*3*4"),
  (S, "a=var(0,10)", "(a+3)+(-3)"),
  (S, "a=var(-5,5)", "(a*2)*-3"),
  (S, "a=var(0,10)", "a+29+a*0-23"),               # ref: test_sum_combine_num
  (S, "a=var(0,10)", "((a<20)&(a*0<1)).where(4,5)"),
]),

("self folding", [
  (S, "a=var(0,10)", "a+0"),
  (S, "a=var(0,10)", "0+a"),
  (S, "a=var(0,10)", "a*1"),
  (S, "a=var(0,10)", "1*a"),
  (S, "a=var(0,10)", "a*0"),
  (S, "a=var(0,10)", "a//1"),
  (S, "a=var(-10,10)", "a//-1"),
  (S, "a=var(1,10)", "a//a"),
  (S, "a=var(1,10)", "a%a"),
  (S, "a=var(0,10)", "a%1"),
  (S, "a=var(-10,10)", "a-a"),
  (S, "a=var(0,10)", "a^0"),
  (S, "a=var(0,10)", "a|0"),
  (S, "a=var(0,10)", "a&0"),
  (S, "a=var(0,10)", "a^a"),
  (S, "a=var(0,10)", "(a^5)^5"),
  (S, "a=var(0,10)", "a.maximum(a)"),
  (S, "a=var(0,10)", "a&a"),
  (S, "a=var(0,10)", "a<a"),
  (S, "a=var(0,10)", "a.ne(a)"),
  (S, "a=var(0,10) b=var(1,5)", "(a%b)%b"),
  (S, "a=var(0,10) b=var(0,10)", "(a+b)-(a+b)"),
]),

("collecting like terms", [
  (S, "a=var(0,8)", "a+a"),
  (S, "a=var(0,8)", "a*2+a*3"),                  # ref: test_factorize
  (S, "a=var(0,8) b=var(0,8)", "b+a*2+a*3"),      # ref: test_factorize
  (S, "a=var(0,8)", "a+a*3"),                    # ref: test_factorize_no_mul
  (S, "a=var(0,8) b=var(0,8)", "(a+b)+a*3"),
  (S, "a=var(0,8) b=var(0,8)", "(a*3+b)+b*3"),
  (S, "a=var(0,8) b=var(0,8)", "(a+b)+b"),        # ref: test_add_self
  (S, "a=var(0,8) b=var(0,8)", "(a*3+b)+a"),
  (S, "a=var(0,8)", "a*3-a"),                    # ref: test_sub_self
  (S, "a=var(0,8)", "a*3-a*3"),
  (S, "a=var(0,8) b=var(0,8)", "a+b-a"),
  (S, "a=var(0,8) b=var(0,8) c=var(0,8)", "a*2+b+c+a*5"),
  (S, "a=var(0,1)", "a*-4+1+a*4"),                # ref: test_sum_num_hoisted_and_factors_cancel_out
  (S, "a=var(-5,5) b=var(0,8)", "b+a*7+a*-7"),
  (S, "a=var(0,3) b=var(0,5)", "(a+b)*3"),        # ref: test_distribute_mul
  (S, "a=var(0,3)", "(1+a)*-2+12"),
  (S, "a=var(0,3)", "-(a+5)"),
  (S, "a=var(0,5)", "(a*10)*9"),                 # ref: test_mul_mul
  (S, "a=var(0,8) b=var(0,8)", "(a*4)*b"),
  (S, "a=var(0,8) b=var(0,8)", "(a+3)+b"),
  (S, "x=var(0,7) y=var(0,12) z=var(0,1)", "(x+y+z)*4"),   # ref: test_sum_mul_distribute
  (S, "a=var(0,8) b=var(0,8)", "a*b+a*b"),
]),

("canonical ordering", [
  (S, "a=var(0,8) b=var(0,8)", "b+a"),
  (S, "a=var(0,8) b=var(0,8)", "a+b"),
  (S, "a=var(0,8) b=var(0,8)", "b*a"),
  (S, "a=var(0,8) b=var(0,8)", "a*b"),
  (S, "a=var(0,8)", "3+a"),
  (S, "a=var(0,8)", "3*a"),
  (S, "a=var(0,8) b=var(0,8)", "(b+3)+a"),
  (S, "a=var(0,8) b=var(0,8)", "(3+a)+(b+4)"),
  (S, "a=var(0,8) b=var(0,8)", "(a*3)*(b*4)"),
  (S, "a=var(0,8) b=var(0,8) c=var(0,8)", "c+b+a"),
  (S, "a=var(0,8) b=var(0,8) c=var(0,8)", "(c+(b+a))"),
  (S, "a=var(0,8) b=var(0,8)", "b.maximum(a)"),
  (S, "a=var(0,8) b=var(0,8)", "a.maximum(b)"),
  (S, "a=var(0,8) b=var(0,8)", "b^a"),
  (S, "a=var(0,8) b=var(0,8)", "b&a"),
  (S, "a=var(0,8) b=var(0,8)", "b|a"),
  (S, "a=var(0,8)", "(-2)*a+4"),
  (S, "a=var(0,8) b=var(0,8)", "(a*2+b*3)+(b*2+a*3)"),
  (S, "a=var(0,8) b=var(0,8) r0=range(4,0)", "r0+b+a+r0*2"),
  (S, "r0=range(4,0) r1=range(4,1)", "r1*4+r0"),
]),

("div folding", [
  (S, "a=var(0,7)", "a//20"),                    # ref: test_div_remove
  (S, "a=var(2,3)", "a//2"),                     # ref: test_div_reduction
  (S, "a=var(2,7)", "a//2"),
  (S, "a=var(1,7)", "a//-2"),                    # ref: test_div_neg_min_max
  (S, "a=var(0,10)", "(a*4)//4"),                # ref: test_mul_div
  (S, "a=var(0,10)", "(a*8)//4"),
  (S, "a=var(0,10)", "(a*4)//8"),
  (S, "a=var(0,10)", "(a*-8+16)//4"),
  (S, "a=var(0,10)", "(a*-4+4)//8"),
  (S, "a=var(0,7) b=var(0,3)", "(a*4+b)//4"),
  (S, "a=var(0,7)", "(a*4+3)//16"),              # ref: test_sum_div_const_big
  (S, "a=var(0,7) b=var(0,3)", "(a+b)//20"),
  (S, "a=var(0,7) b=var(0,3)", "(a+b)//2"),
  (S, "a=var(0,7) b=var(0,3)", "(a*4+b*4)//2"),
  (S, "a=var(0,7) b=var(0,3)", "(a*5+b*4)//2"),     # ref: test_sum_div_some_factor
  (S, "a=var(0,7) b=var(0,3)", "(a*4+b*4+7)//16"),  # ref: test_sum_div_trim_const
  (S, "a=var(0,1800)", "(a//10)//9"),            # ref: test_div_div
  (S, "a=var(0,124)", "(a//2+1)//2"),            # ref: test_div_const_div
  (S, "a=var(0,124)", "((-a)//2-1)//2"),
  (S, "a=var(0,124)", "((a-10)//2+10)//2"),
  (S, "a=var(0,124)", "(a//-2)//-3"),            # ref: test_nested_div_negative_divisor
  (S, "a=var(0,124)", "(a//2)//-3"),
  (S, "a=var(0,124)", "(a//-2)//3"),
  (S, "a=var(0,124)", "(a//-2+1)//3"),
  (S, "a=var(0,5)", "(a-2)//4"),                 # ref: test_add_div
  (S, "a=var(0,5)", "(a-1)//4"),
  (S, "a=var(0,5)", "(a+4)//4"),
  (S, "a=var(0,5)", "(a+5)//4"),
  (S, "x=var(0,24)", "(x+19)//20"),              # ref: test_sum_div_big_const
  (S, "x=var(0,24)", "(x+21)//20"),
  (S, "a=var(0,255)", "(-a+256)//2"),            # ref: test_div_neg_rem
  (S, "x=var(0,100)", "(-x+199)//-4+50"),        # ref: test_div_neg_cancel
  (S, "x=var(0,100)", "(-x+201)//-4+50"),
  (S, "a=var(0,2)", "(a-12)//8"),                # ref: test_floordiv_const_evaluation
  (S, "x=var(-20,20)", "x//4"),
  (S, "x=var(-20,-1)", "(x-3)//4"),
  (S, "x=var(-20,20) y=var(1,6)", "x//y"),
  (S, "x=var(0,10) y=var(-6,-1)", "x//y"),
  (S, "r0=range(16,0)", "r0//16"),
  (S, "x=var(0,9)", "(x*-10)//11"),               # ref: test_div_numerator_negative
]),

("mod folding", [
  (S, "a=var(0,6)", "a%100"),                    # ref: test_mod_remove
  (S, "a=var(0,7) b=var(0,3)", "(a*4+b)%4"),
  (S, "a=var(0,7) b=var(0,3)", "(a*4+b*4)%2"),
  (S, "a=var(0,31)", "(a%12)%4"),                # ref: test_mod_mod
  (S, "a=var(0,31)", "((4*a)%12)%4"),
  (S, "a=var(0,31)", "((5*a)%12)%5"),
  (S, "a=var(0,31)", "(a%4)%12"),
  (S, "a=var(0,31)", "(a%8)%4"),
  (S, "a=var(0,20)", "(a*10)%9"),                # ref: test_mul_mod_large
  (S, "a=var(0,5)", "(a*10)%9"),                 # ref: test_mul_mod_small
  (S, "a=var(1,2)", "(1+a)%2"),                  # ref: test_mod_to_sub
  (S, "a=var(-20,20)", "a%10"),                  # ref: test_big_mod
  (S, "a=var(-20,-11)", "a%10"),
  (S, "a=var(0,124)", "(-a)%4"),                 # ref: test_neg_mod
  (S, "a=var(0,124)", "a%-4"),
  (S, "x=var(0,100)", "(x-50)%3"),               # ref: test_mod_const_reduction_negative_offset
  (S, "x=var(0,100)", "(x-50)%-3"),
  (S, "x=var(0,100)", "(x+7)%-13"),
  (S, "a=var(0,7) b=var(0,3)", "(a%4+b)%2"),
  (S, "a=var(0,7) b=var(0,10)", "(a*100+b*50)%100"),   # ref: test_mod_factor
  (S, "a=var(0,10) b=var(0,10)", "(-29+a+b*28)%28"),     # ref: test_mod_factor_negative
  (S, "a=var(0,10) b=var(0,10)", "(-40+a*2+b*40)%40"),   # ref: test_mod_cancel
  (S, "x=var(0,1575)", "((x-1064)%512)%4"),      # ref: test_nested_mod_negative_range
  (S, "x=var(0,1575)", "((x-1064)%512)%128"),
  (S, "a=var(0,100)", "(a%-8)%2"),               # ref: test_nested_div_mod_negative_inner_divisor
  (S, "r0=range(16,0)", "r0%16"),
  (S, "r0=range(16,0)", "r0%32"),
  (S, "v1=var(0,128) v3=var(0,7)", "((v1%2)*2+(v3-1)%5-2)%5"),  # ref: test_mod_mod_wrong_sign
  (S, "v2=var(0,8) v3=var(0,4)", "((((v3+3)%7)+(v2-2))%7)%7"),   # ref: test_mod_mod_wrong_sign2
  (S, "x=var(0,10) y=var(-10,-1)", "x%y"),
]),

("general divmod (congruence / gcd / nest_by_factor / factor_remainder)", [
  (S, "a=var(0,3)", "(3+3*a)%4"),                # ref: test_mod_congruence
  (S, "a=var(0,3)", "(17+13*a)%18"),
  (S, "a=var(0,3)", "(2+9*a)%18"),
  (S, "a=var(0,2)", "(6*(a+1))%9"),
  (S, "x=var(0,3) y=var(0,3)", "(9+9*x+9*y)%10"),             # ref: test_mod_congruence_multiple_vars
  (S, "x=var(0,2) y=var(0,2) z=var(0,2)", "(7+9*x+9*y+z)%10"),
  (S, "x=var(0,1) y=var(0,1)", "(3+2*x+3*y)%4"),              # ref: test_mod_congruence_tied_remainder
  (S, "a=var(0,3)", "(3+3*a)//4"),                            # ref: test_div_congruence
  (S, "a=var(0,2)", "(18+17*a+17)//18"),
  (S, "x=var(0,3) y=var(0,2)", "(9+19*x+18*y)//10"),
  (S, "a=var(4,5)", "(3+a)%4"),                               # ref: test_mod_binary_expression
  (S, "a=var(0,1)", "(3+a)//4"),
  (S, "a=var(0,2)", "(a*4+1)//6"),                            # ref: test_gcd_with_remainder
  (S, "a=var(0,2)", "(a*4+2)//6"),
  (S, "a=var(0,2)", "(a*4+3)%6"),
  (S, "a=var(0,2)", "(a*4)%6"),
  (S, "a=var(0,10)", "(a*-4+4)%8"),                           # ref: test_mod_gcd_factor_neg
  (S, "a=var(0,10)", "(a*-8+20)%4"),
  (S, "a=var(-1,5)", "(a*2+7)//8"),                           # ref: test_floordiv_gcd_with_remainder_negative_numerator
  (S, "a=var(-10,10) b=var(0,3)", "(a*4+b)//12"),             # ref: test_floordiv_factor_nest_negative_numerator
  (S, "x=var(0,15) y=var(0,3)", "(x*4+y)%8"),                 # ref: test_mod_nest_by_factor
  (S, "a=var(0,10) b=var(0,2)", "(a*3+b)%9"),
  (S, "a=var(0,7) b=var(0,1)", "(a*4+b+2)%8"),                # ref: test_mod_nest_by_factor_with_const
  (S, "a=var(0,7) b=var(0,2)", "(a*6+b+3)%12"),
  (S, "a=var(0,2) b=var(0,31) c=var(0,1)", "(160*a+5*b+4*c)//60"),   # ref: test_div_nest_by_factor_with_const
  (S, "a=var(0,2) b=var(0,31) c=var(0,1)", "(160*a+5*b+4*c+59)//60"),
  (S, "a=var(0,1) b=var(0,1)", "(a*2+b*3+2)//6"),             # ref: test_div_by_factor_tie_break
  (S, "b=var(0,100)", "(31*b+1)//18"),                        # ref: test_div_partial_quotient
  (S, "b=var(0,100)", "(19*b+3)//7"),
  (S, "x=var(0,7) y=var(0,12) z=var(0,1)", "(x*4+y*2+z)//12"),         # ref: test_sum_div_complex3
  (S, "x=var(0,2) y=var(0,12) z=var(0,12)", "(x*3+y*19+z*38)//57"),   # ref: test_sum_div_complex4
  (S, "i0=var(0,9) i1=var(0,6)", "(i0*-7+i1+63)//35"),        # ref: test_nest_div_negative_factor
  (S, "a=var(-10,10) b=var(-10,10) d=var(1,10)", "(3*a+9*b)//(3*d)"),   # ref: test_div_symbolic_const_gcd
  (S, "a=var(-10,10) b=var(-10,10) d=var(1,10)", "(d*a*b*d)//d"),       # ref: test_symbolic_gcd_div
  (S, "a=var(-10,10) b=var(-10,10) d=var(1,10)", "(d*a+b*d)//d"),
  (S, "a=var(-10,10) b=var(-10,10) d=var(1,10) e=var(-10,-1)", "(3*a*d+9*b*d)//(3*d*e)"),
  (S, "a=var(0,10) b=var(0,10) d=var(1,10)", "(d*a+b)//d"),              # ref: test_symbolic_factor_remainder_div
  (S, "a=var(0,10) b=var(0,10) d=var(1,10)", "(d*a*20+b)//(5*d)"),
  (S, "a=var(0,10) b=var(0,10) d=var(1,10)", "(d*a*20+b*d*5+10)//(5*d)"),
  (S, "d=var(2,5) a=var(0,3) b=var(0,1)", "(d*a+b)%d"),                  # ref: test_mod_variable_denom_factor_remainder
  (S, "x=var(0,10) y=var(1,10)", "(x*y)//y"),
  (S, "x=var(0,10) y=var(1,10)", "(x*y)%y"),
  (S, "x=var(0,10) y=var(1,10) z=var(0,5)", "(x*y+z*y+3)%y"),
  (S, "x=var(20,23) y=var(8,10)", "x//y"),                               # ref: test_divmod_variable_denom_fold_to_const
  (S, "x=var(20,23) y=var(8,10)", "x%y"),
  (S, "x=var(0,8) y=var(1,3)", "(x*y*6)//(y*3)"),
]),

("div/mod recombination", [
  (S, "x=var(0,124)", "x%4+(x//4)*4"),                        # ref: test_div_mod_recombine
  (S, "x=var(0,124)", "(x//4)*4+x%4"),
  (S, "x=var(0,124) y=var(0,124)", "y+x%4+(x//4)*4"),
  (S, "x=var(0,124) y=var(0,124)", "y+(x//4)*8+2*(x%4)"),
  (S, "x=var(0,15)", "(x//2)%4+(x//8)*4"),                    # ref: test_div_mod_recombine_partial
  (S, "a=var(0,2)", "(31*a+1)%30+((31*a+1)//30)*30"),         # ref: test_div_mod_recombine_folded_mod
  (S, "x=var(0,150527)", "x//3%224*3+x%3+x//672*672"),        # ref: test_div_mod_recombine_3level
  (S, "x=var(0,384)", "x//11%7*11+x%11+x//77*77"),
  (S, "x=var(0,209)", "x//7%6*14+x//42*84"),
  (S, "x=var(-1000,1000)", "x//3%224*3+x%3+x//672*672"),
  (S, "x=var(-1000,1000)", "x//3%7*3+x//21*21"),
  (S, "x=var(0,150527)", "x//3%224*3+x//600*600"),
  (S, "b=var(0,100)", "(16*b+2)%18+((16*b+2)//18)*18"),       # ref: test_div_mod_recombine_with_gcd
  (S, "b=var(0,100)", "(19*b+3)%7+((19*b+3)//7)*7"),          # ref: test_div_mod_recombine_large_coeff
  (S, "b=var(-100,100)", "((b//-3)%-2)+(b//6)*-2"),           # ref: test_div_mod_recombine_negative_div_unsound
  (S, "x=var(0,100)", "(x%4)*3+((x//4)%2)*12"),               # ref: test_mod_recombine_with_outer_mul
  (S, "x=var(0,100)", "(x%4)*-2+((x//4)%2)*-8"),
  (S, "x=var(0,15) y=var(0,3)", "((x*4+y)//8)*8+(x*4+y)%8"),  # ref: test_div_mod_recombine_after_nesting
  (S, "x=var(0,15) y=var(0,3)", "((x*4+y)//8)*16+((x*4+y)%8)*2"),
  (S, "a=var(0,7) b=var(0,14)", "((a*15+b)//10)*2+((a*15+b)//5)%2"),   # ref: test_div_mod_recombine_after_asymmetric_fold
  (S, "x=var(0,199)", "((x//3)%4)*2+((x//12)%5)*8"),          # ref: test_div_mod_recombine_merged_quotient
  (S, "x=var(0,199)", "((x//3+1)%4)+((x+3)//12)*4"),
  (S, "x=var(0,199)", "x%-3+((x//-3)%5)*-3"),                 # ref: test_div_mod_recombine_negative_div
  (S, "x=var(0,100)", "(x-50)%3+((x-50)//3)*3"),              # ref: test_div_mod_recombine_shifted_quotient
  (S, "x=var(0,100)", "(x-50)%3+(((x-50)//3)%5)*3"),
  (S, "y=var(0,99)", "((y-50)//5)%4+((y-50)//20)*4"),
  (S, "x=var(0,31) y=var(0,5)", "(x//8)*4+y+(x//2)%4"),       # ref: test_div_mod_recombine_in_additive_sum
  (S, "x=var(0,127)", "(x//2)%4*2+x%2"),                      # ref: test_div_mod_recompose_low_order_remainder
  (S, "i0=var(0,7) i1=var(0,7)", "((i0*8+i1)//4)*4+(i0*8+i1)%4"),   # ref: test_reshape_index_roundtrip
  (S, "x=var(0,23)", "x%12//4*4+x%4+x//12*12"),               # ref: test_mod_div_reorder
  (S, "x=var(0,23)", "x%6//3"),
]),

("comparison folding", [
  (S, "a=var(3,8)", "a<4"),                                  # ref: test_cmp_simple
  (S, "a=var(3,8)", "a>=8"),
  (S, "a=var(3,8)", "a>=77"),                                 # ref: test_ge
  (S, "a=var(3,8)", "a>=3"),
  (S, "a=var(3,8)", "a<9"),                                   # ref: test_lt
  (S, "a=var(3,8)", "a<3"),
  (S, "a=var(3,4) b=var(5,6)", "a<b"),
  (S, "a=var(5,6) b=var(3,5)", "a<b"),
  (S, "a=var(3,5) b=var(5,6)", "a<=b"),
  (S, "a=var(0,127) b=var(0,3)", "(a*4+b)<64"),               # ref: test_lt_divides
  (S, "a=var(0,127) b=var(0,64)", "(a*4+b)<128"),             # ref: test_lt_factors
  (S, "a=var(0,7) b=var(0,3)", "a*4+b<16"),                   # ref: test_sum_lt_fold
  (S, "a=var(0,7) b=var(0,4)", "a*4+b<16"),
  (S, "a=var(0,5)", "a*4<13"),                                # ref: test_mul_lt
  (S, "a=var(-5,5)", "a*4<-13"),
  (S, "a=var(-5,5)", "a*-4<13"),
  (S, "a=var(0,5)", "a*4>=13"),
  (S, "a=var(0,6)", "a+2<3"),                                 # ref: test_lt_sum_remove
  (S, "a=var(0,6) b=var(0,6)", "(a*6+b*6)<8"),                # ref: test_lt_simple_factor
  (S, "a=var(0,6) b=var(0,6) c=var(0,6)", "(a*6+b*4+c*8)<4"),  # ref: test_lt_sum_factor_rhs_partial
  (S, "x=var(0,24)", "x//4<3"),                               # ref: test_floordiv_lt
  (S, "x=var(0,24)", "(x-20)//4<-3"),
  (S, "x=var(0,24)", "x//-4<-3"),
  (S, "x=var(0,24)", "x//-4<-6"),
  (S, "x=var(-20,20)", "x//4<-1"),                            # ref: test_floordiv_lt_negative_c
  (S, "a=var(0,3) b=var(0,3)", "-a<-b"),                      # ref: test_neg_in_comp
  (S, "a=var(0,3) b=var(0,3)", "(a*3+b*4<1).ne(True)"),       # ref: test_simplex_lt
  (S, "a=var(0,3) b=var(0,3) c=var(0,3)", "(a+b*2+c*4<1).ne(True)"),
  (S, "a=var(0,3) d=var(-3,3)", "(a*3+d*4<1).ne(True)"),
  (S, "a=var(0,10)", "a.ne(11)"),
  (S, "a=var(0,10)", "a.eq(-1)"),
  (S, "a=var(0,10)", "a.eq(5)"),
  (S, "a=var(5,5) b=var(0,3)", "(a+b).ne(4)"),
  (S, "a=var(0,10)", "3<a"),
  (S, "a=var(0,10)", "a+5<a+7"),
  (S, "a=var(1,10)", "((((a*2)-1)*2+1)*a)//((a*-2)+1)<=0"),   # ref: test_symbolic_div
]),

("min/max folding", [
  (S, "a=var(0,20)", "a.maximum(10).maximum(11)"),            # ref: test_max_folds
  (S, "a=var(0,5) b=var(6,9)", "a.maximum(b)"),
  (S, "a=var(0,5) b=var(6,9)", "b.maximum(a)"),
  (S, "a=var(0,5) b=var(5,9)", "a.maximum(b)"),
  (S, "a=var(0,5)", "a.maximum(-3)"),
  (S, "a=var(0,5)", "a.maximum(7)"),
  (S, "a=var(0,5) b=var(3,9)", "a.maximum(b)"),
  (S, "a=var(0,5) b=var(6,9)", "a.minimum(b)"),
  (S, "a=var(0,5)", "a.minimum(-3)"),
  (S, "a=var(0,5)", "a.minimum(3)"),
  (S, "x=var(-10,10)", "(x<0).where(0,x)"),                   # ref: test_equivalent_const_max
  (S, "x=var(-10,10)", "(0<x).where(x,0)"),
  (S, "x=var(-10,10)", "(x<3).where(3,x)"),
  (S, "x=var(-10,10)", "(2<x).where(x,2)"),
  (S, "x=var(-10,10)", "(x<3).where(4,x)"),
  (S, "a=var(0,5) b=var(0,5)", "(a+3).maximum(b+3)"),
  (S, "a=var(0,5) b=var(0,5)", "(a*2).maximum(a*2+1)"),
  (S, "a=var(-8,8)", "a.maximum(0)+a.minimum(0)"),
]),

("where folding", [
  (S, "a=var(0,10) b=var(0,10)", "(a<20).where(a,b)"),
  (S, "a=var(0,10) b=var(0,10)", "(a<0).where(a,b)"),
  (S, "a=var(0,10) b=var(0,10)", "(a<5).where(b,b)"),
  (S, "a=var(0,3)", "(a<2).where(True,False)"),               # ref: test_where_removal
  (S, "a=var(0,3)", "(a<2).where(False,True)"),
  (S, "a=var(0,3)", "(a<2).where(False,True).where(False,True)"),
  (S, "x=var(0,3) a=var(0,3) b=var(0,3)", "(x<2).logical_not().where(a,b)"),    # ref: test_negation_in_where
  (S, "s=var(0,10) a=var(0,3) b=var(0,3)", "(s<6).where((s>2).where(a,b),b)"),  # ref: test_where_merge_branches
  (S, "s=var(0,10) a=var(0,3) b=var(0,3)", "(s<5).where((s<6).where(a,b),b)"),
  (S, "x=var(0,3) y=var(0,3) a=var(0,3) b=var(0,3)", "(x<2).where(a,(y<2).where(a,b))"),  # ref: test_where_or_dual
  (S, "x=var(0,3) a=var(0,3) b=var(0,3)", "(x<2).where(a,0)+(x<2).where(b,1)"),          # ref: test_where_combine
  (S, "x=var(0,3) a=var(0,3) b=var(0,3)", "(x<2).where(a,0).maximum((x<2).where(b,1))"),
  (S, "x=var(0,3) a=var(0,3) b=var(0,3) c=var(0,3)", "(c+(x<2).where(a,0))+(x<2).where(b,1)"),
  (S, "x=var(0,3) b=var(0,3) c=var(0,3)", "(x<2).where(b,1)+(x<2).where(c,c+1)"),
  (S, "x=var(0,3) a=var(0,3) b=var(0,3)", "(x<2).where(a,b)+(x<2).where(b,a)"),
  (S, "x=var(0,3) a=var(0,3) b=var(0,3)", "(x<2).where(a,0)+(x<2).where(0,b)"),          # ref: test_where_combine_cross_zero
  (S, "x=var(0,3) a=var(0,3)", "(x<2).where(a,0)+(x<2).where(0,a)"),
  (S, "x=var(0,10)", "(x<5).where((x<5).where(-x,x)*2,(x<5).where(-x,x)+1)"),            # ref: test_where_closure_folding
  (S, "x=var(0,10) a=var(0,3) b=var(0,3)", "(x<5).where((x<7).where(a,b),(x<7).where(b,a))"),
  (S, "x=var(0,10) a=var(0,3) b=var(0,3) c=var(0,3)", "(x<5).where((x<5).logical_not().where(a,b)*2,c)"),
  (S, "x=var(0,24)", "(x<4).where(x//4,-1)"),                 # ref: test_gated_load
  (S, "x=var(0,10) a=var(0,10)", "(x<5).where(a+1,a+1)"),
  (S, "x=var(0,10) a=var(0,10)", "(x<5).where(a,3)*(x<5).where(2,4)"),
]),

("boolean algebra", [
  (S, "a=var(0,10)", "(a<5)|(a<5).logical_not()"),            # ref: test_bool_or_not_tautology
  (S, "a=var(0,10)", "(a<5)&(a<5).logical_not()"),            # ref: test_bool_and_not_contradiction
  (S, "a=var(0,10)", "(a<5)&True"),
  (S, "a=var(0,10)", "(a<5)&False"),
  (S, "a=var(0,10)", "(a<5)|True"),
  (S, "a=var(0,10)", "(a<5)|False"),
  (S, "a=var(0,10)", "True&(a<5)"),
  (S, "a=var(0,10)", "(a<5).logical_not().logical_not()"),
  (S, "a=var(0,10)", "(a<5).ne(False)"),                      # ref: test_bool_ne_false
  (S, "a=var(0,10)", "(a<5).ne(True)"),
  (S, "a=var(0,10)", "(a<5).eq(True)"),
  (S, "a=var(0,10)", "(a<5)&(a<5)"),
  (S, "a=var(0,10)", "(a<5)|(a<5)"),
  (S, "a=var(0,10)", "(a<5)^(a<5)"),
  (S, "a=var(0,10) b=var(0,10)", "((a<5)^(b<3))^(b<3)"),
  (S, "a=var(0,10) b=var(0,10)", "(b<3)&(a<5)"),
  (S, "a=var(0,10) b=var(0,10)", "((a<5)&(b<3))|True"),
  (S, "a=var(0,10)", "(a>=5).logical_not()"),
  (S, "a=var(0,10)", "(a<5).eq(a<5)"),
  (S, "a=var(0,10) b=var(0,10)", "(a<5).logical_not()|(b<20)"),
  (Y, "a=var(0,10)", "(a<5)&(a<5).logical_not()"),
  (Y, "a=var(0,10)", "(a<5)&(a>=3)&(a<4)"),
  (Y, "a=var(0,10) b=var(0,10)", "(a<5)&(b<3)&(a<7)"),
]),

("uop_given_valid", [
  (V, "r0=range(16,0)", "r0<8 => (r0+8)//8"),
  (V, "r0=range(16,0)", "r0<8 => r0%8"),
  (V, "r0=range(16,0)", "r0<8 => r0//8"),
  (V, "r0=range(16,0)", "r0>=8 => r0//8"),
  (V, "r0=range(16,0)", "r0>=8 => r0%8"),
  (V, "r0=range(16,0)", "r0>=4 => (r0-4)//12"),
  (V, "r0=range(3,0)", "r0<3 => (r0-1)//3"),                          # ref: test_invalid_gate_simplifies_index
  (V, "r0=range(16,0) r1=range(16,1)", "(r0<4)&(r1<4) => (r0*4+r1)//16"),
  (V, "r0=range(16,0) r1=range(16,1)", "(r0<4)&(r1<4) => (r0*4+r1)%16"),
  (V, "r0=range(16,0) r1=range(16,1)", "(r0>=1)&(r1<15) => (r0-1)//15+(r1+1)//16"),
  (V, "r0=range(4,0) r1=range(4,1) r2=range(4,2) r3=range(4,3)",
   "((r0+r1)>=1)&((r2+r3)>=1) => (r0+r1+r2+r3+28)//30"),             # ref: test_valid_becomes_const2
  (V, "r0=range(4,0) r1=range(4,1)", "(r0+r1)>=1 => (r0+r1+2)//3"),
  (V, "r0=range(4,0) r1=range(4,1)", "(r0+r1)>=1 => (r0+r1+3)//4"),
  (V, "r0=range(30,0) r1=range(7,1) r2=range(2,2)",
   "(r2<1)&(r1<6) => ((r1+r2+1)//7)*-31+(((r1+r2+218)//224+r0)%30)*1568"),   # ref: test_valid_becomes_const1
  (V, "x=var(0,20)", "x<10 => x.maximum(10)"),
  (V, "x=var(0,20)", "x<10 => (x<12)"),
  (V, "x=var(0,20)", "5<x => x//3"),
  (V, "x=var(0,20)", "5<x => (x+1)//6"),
  (V, "x=var(0,20)", "(x>=2)&(x<4) => x//2"),
  (V, "x=var(0,20) y=var(0,20)", "(x<4)&(y<4) => (x*4+y)//16+(x*4+y)%16"),
  (V, "x=var(-10,10)", "x>=0 => x//4"),
  (V, "x=var(-10,10)", "x<0 => x%4+x//4*4"),
  (V, "x=var(0,20)", "x<6 => (x*3)%18"),
  (V, "r0=range(16,0)", "r0<1 => r0*4+7"),
  (V, "r0=range(8,0) r1=range(8,1)", "(r0*8+r1)<16 => (r0*8+r1)//16"),
  (V, "x=var(0,20) y=var(0,5)", "x<5 => (x+y)//10"),
  (V, "r0=range(2,0) r1=range(2,1)", "(r0+r1)>=1 => (r0+r1+3)//4"),
  (V, "r0=range(2,0) r1=range(2,1)", "(r0+r1)>=1 => (r0+r1-1)//2"),
  (V, "r0=range(2,0) r1=range(2,1) r2=range(4,2)", "(r0+r1)>=1 => (r0+r1+r2*2-1)//2"),
  (V, "r2=range(4,2) r3=range(4,3)", "(r2+r3)>=1 => ((r2+r3)*2+5)//6"),
  (V, "r2=range(4,2) r3=range(4,3)", "(r2+r3)>=1 => (r2+7)//8+(r3+7)//8"),
  (V, "x=var(0,20)", "(x+3)<10 => (x+3)//10"),
  (V, "x=var(0,20)", "(x%4)<2 => (x%4)//2"),
  (V, "x=var(0,20)", "(x//2)<3 => x//6"),
  (V, "x=var(0,20)", "x.ne(0) => (x+19)//20"),
]),

("sym with valid gates", [
  (Y, "r0=range(16,0)", "((r0+8)//8).valid(r0<8)"),
  (Y, "r0=range(16,0) r1=range(8,1)", "((r0*8+r1)//8).valid(r0<4)"),
  (Y, "r0=range(16,0) r1=range(16,1)", "((r0*4+r1)%16).valid((r0<4)&(r1<4))"),
  (Y, "r0=range(3,0)", "((r0-1)//3).valid(r0<3)"),
  (Y, "x=var(0,10)", "(x.valid(x<5))*0"),                             # ref: test_invalid_times_0
  (Y, "x=var(0,10)", "10*x.valid(x<5)"),                              # ref: test_alu_moves_inside_invalid
  (Y, "x=var(0,10) y=var(0,10)", "((x.valid(x<5))//2).valid(y<5)"),   # ref: test_merge_invalid_conditions
  (Y, "x=var(0,10)", "(x<5).where((x<5).where(x,0).valid(x<5),x+100)"),   # ref: test_invalid_lift_keeps_live_else
  (Y, "x=var(0,10) a=var(0,3) c=var(0,3)", "(x<5).where(a.valid(x<5),c)"),  # ref: test_where_closure_folding_valid
  (Y, "x=var(0,10) a=var(0,3) t=var(0,3)", "(x<5).where(t,a.valid(x<5))"),
  (Y, "x=var(0,10)", "(x<5).where(x,x.valid(x<3))"),
  (Y, "x=var(0,10) y=var(0,10)", "x.valid(y<3)+y.valid(y<3)"),
  (Y, "x=var(0,10)", "(x+3).valid(x<20)"),
  (Y, "x=var(0,10)", "(x+3).valid(x<0)"),
  (Y, "r0=range(4,0) r1=range(4,1) r2=range(4,2) r3=range(4,3)",
   "(r0+r1+r2+r3).valid(((r0*3+r1)<8)&((((r0*3+r1)//8+r2*3+r3)%4)<2))"),    # ref: test_simplify_within_valid1
  (Y, "r0=range(2,0)", "r0.valid((r0<1)&(((r0*5+1)%6)<5))"),          # ref: test_valid_order_matters1
  (Y, "r0=range(1024,0) r1=range(4,1) r2=range(4,2)", "r0.valid((r0<(r1*4+r2))&(r0>=0))"),   # ref: test_valid_with_non_const_rhs
  (Y, "g=var(0,4) l=var(0,3)", "(g*4+l-19).valid(g*4+l>=19)"),        # ref: test_cumsum
  (Y, "x=var(0,10) y=var(0,10)", "(x<4)&(x<6)"),
  (Y, "x=var(0,10) y=var(0,10)", "((x*4+y)<40)&(x<8)"),
  (Y, "x=var(0,20) y=var(0,20)", "(x+y)*4"),                          # sym distributes (x+y)*c
  (Y, "x=var(0,20) y=var(0,20)", "-(x+y)"),
  (Y, "a=var(0,4) b=var(0,127) c=var(0,7) d=var(0,7) e=var(0,1) f=var(0,15)",
   "((1+f)%16)*49+((262145+f)//16)*802816+a*3211264+b*784+c*8+e*100352-13151129600+d"),   # ref: test_resnet_half
]),

("realistic index expressions", [
  (S, "r0=range(8,0) r1=range(8,1) r2=range(8,2)", "((r0*64+r1*8+r2)//8)%8"),
  (S, "r0=range(8,0) r1=range(8,1) r2=range(8,2)", "(r0*64+r1*8+r2)//64"),
  (S, "r0=range(8,0) r1=range(8,1) r2=range(8,2)", "(r0*64+r1*8+r2)%8"),
  (S, "r0=range(8,0) r1=range(8,1) r2=range(8,2)", "((r0*64+r1*8+r2)//8)%8*8+(r0*64+r1*8+r2)%8+((r0*64+r1*8+r2)//64)*64"),
  (S, "r0=range(4,0) r1=range(6,1)", "((r0*6+r1)//3)*3+(r0*6+r1)%3"),
  (S, "r0=range(4,0) r1=range(6,1)", "((r0*6+r1)%4)*6+((r0*6+r1)//4)"),   # reshape (4,6)->(6,4) permute
  (S, "r0=range(12,0) r1=range(2,1)", "((r0*2+r1)//6)*6+((r0*2+r1)%6)"),
  (S, "r0=range(3,0) r1=range(4,1) r2=range(5,2)", "((r0*20+r1*5+r2)//5)%4"),
  (S, "r0=range(3,0) r1=range(4,1) r2=range(5,2)", "((r0*20+r1*5+r2)//20)"),
  (S, "r0=range(3,0) r1=range(4,1) r2=range(5,2)", "(r0*20+r1*5+r2)%20//5"),
  (S, "g0=var(0,24) g1=var(0,1) g2=var(0,255) l0=var(0,1) l1=var(0,15) l2=var(0,3)",
   "(g2*640+g1*160+(g0//5)*2+l0*320+l1*10+l2*2+1)//20"),        # ref: test_sum_div_complex1
  (S, "g0=var(0,7) l2=var(0,1) l3=var(0,1)", "(g0*4+l2*2+l3)//10"),          # ref: test_sum_div_complex2
  (S, "g0=var(0,10) g1=var(0,10) l0=var(0,1) l1=var(0,1) k5=var(0,2) k6=var(0,2)",
   "(l1+(g1*18+k5*18+l0*162)+g0*2+k6*2-40)//18"),               # ref: test_div_drop_small_terms
  (S, "g=var(0,124) l=var(0,7)", "(-g*8-l+999)//-4+250"),       # ref: test_div_neg_all_range
  (S, "g=var(0,124) l=var(0,7)", "(-g*8-l+1002)//-4+250"),
  (S, "l0=var(0,7) l1=var(0,7)", "((-l0-l1+14)//-32)+4"),      # ref: test_div_neg_then_neg
  (S, "l0=var(0,7) l1=var(0,7)", "((-l0-l1+150)//-32)+4"),
  (S, "r0=range(4,0) r1=range(2,1) r2=range(2,2)", "(r0*2+(r2*2+r1*3+3)%4)-2"),   # ref: test_from_merge_views
  (S, "g0=var(0,12) g1=var(0,12) r0=range(4,0)", "((g1+r0*13)+(g0+39)//42)%14<11"),
  (S, "r0=range(32,0) r1=range(32,1)", "((r0*32+r1)//16)%2"),
  (S, "r0=range(32,0) r1=range(32,1)", "(r0*32+r1+5)//32"),
  (S, "r0=range(16,0) r1=range(3,1)", "(r0+r1-1).valid(((r0+r1)>=1)&((r0+r1)<17))"),
  (S, "r0=range(2560,0)", "(-1*r0+2559)//-4*-1"),
  (S, "v1=var(0,8) v2=var(0,2) v3=var(0,1)", "((((v1-13+v2-2+v3+v2)//3)%7)//2+v2)*-1+v3"),   # ref: test_fuzz_failure1 (shape)
  (S, "v1=var(0,16) v2=var(0,5) v3=var(0,3)", "(((v1+(v2+(((v3+(v2*2))+1)//3)))+4)//9-57)//36"),   # ref: test_fuzz_failure2
  (S, "r0=range(64,0) r1=range(3,1) r2=range(3,2)", "((r0//8+r1-1)*8+(r0%8+r2-1))"),   # conv window
  (S, "r0=range(64,0) r1=range(3,1)", "((r0//8)+r1-1)<8"),
]),

("not simplifiable", [
  (S, "a=var(0,10) b=var(1,10)", "a//b"),
  (S, "a=var(0,10) b=var(1,10)", "a%b"),
  (S, "a=var(0,10)", "a//3"),
  (S, "a=var(0,10)", "a%3"),
  (S, "a=var(-10,10) b=var(-10,10)", "a*b"),
  (S, "a=var(0,10) b=var(0,10)", "a<b"),
  (S, "a=var(0,10)", "(a*3+1)//5"),
  (S, "a=var(0,10) b=var(0,10)", "(a+b)%7"),
  (S, "a=var(0,10) b=var(0,10)", "a.maximum(b)"),
  (S, "a=var(0,10) b=var(0,10)", "(a<5).where(a,b)"),
  (S, "x=var(0,150527)", "x//672*700+x//3%224*3"),
  (S, "a=var(0,511) b=var(0,256)", "a*4+b<512"),
  (S, "a=var(0,3) b=var(0,3)", "(a*-3+b*4<1).ne(True)"),
  (S, "x=var(-10,10) y=var(-8,-2)", "x//y"),
  (S, "x=var(0,10) a=var(0,10) b=var(0,10)", "(x<5).where(a,b)+(x<5).where(b,a)"),
]),
]

# ******************************************************************************************************************

VAR_RE = re.compile(r"^(\w+)=(var|range)\((-?\d+),(-?\d+)\)$")

def parse_vars(spec: str) -> tuple[dict[str, UOp], dict[str, tuple[int, int]]]:
  ns: dict[str, UOp] = {}
  domains: dict[str, tuple[int, int]] = {}
  if spec.strip() == "-": return ns, domains
  for decl in spec.split():
    m = VAR_RE.match(decl)
    if m is None: raise ValueError(f"bad var declaration {decl!r}")
    name, kind, p0, p1 = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
    if kind == "var":
      ns[name], domains[name] = UOp.variable(name, p0, p1), (p0, p1)
    else:
      if name != f"r{p1}": raise ValueError(f"range {decl!r} must be named r{p1}")
      ns[name], domains[name] = UOp.range(p0, p1), (0, p0-1)
  return ns, domains

METHODS = {"where": 2, "maximum": 1, "minimum": 1, "ne": 1, "eq": 1, "logical_not": 0, "valid": 1}
BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.BitAnd, ast.BitOr, ast.BitXor)
CMPOPS = (ast.Lt, ast.Gt, ast.LtE, ast.GtE)

def check_grammar(expr: str, names: set[str]) -> None:
  """keep expressions inside the grammar the C++ parser implements"""
  def walk(n: ast.AST) -> None:
    if isinstance(n, ast.Expression): walk(n.body)
    elif isinstance(n, ast.Constant):
      if type(n.value) not in (int, bool): raise ValueError(f"literal {n.value!r} not allowed")
    elif isinstance(n, ast.Name):
      if n.id not in names and n.id not in ("True", "False"): raise ValueError(f"unknown name {n.id!r}")
    elif isinstance(n, ast.BinOp) and isinstance(n.op, BINOPS): walk(n.left); walk(n.right)
    elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub): walk(n.operand)
    elif isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], CMPOPS): walk(n.left); walk(n.comparators[0])
    elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in METHODS and not n.keywords:
      if len(n.args) != METHODS[n.func.attr]: raise ValueError(f".{n.func.attr} takes {METHODS[n.func.attr]} args")
      walk(n.func.value)
      for a in n.args: walk(a)
    else: raise ValueError(f"{ast.dump(n)[:60]} is outside the case grammar")
  walk(ast.parse(expr, mode="eval"))

def build(expr: str, ns: dict[str, UOp]) -> UOp:
  check_grammar(expr, set(ns))
  ret = eval(expr, {"__builtins__": {}}, dict(ns))  # pylint: disable=eval-used
  if isinstance(ret, (bool, int)): ret = UOp.const(ret)  # a literal-only expression folds in python
  if not isinstance(ret, UOp): raise ValueError(f"{expr!r} did not build a UOp (got {ret!r})")
  return ret

def evaluate(u: UOp, env: dict[str, int]):
  """evaluate a UOp graph at a point, node by node, without any rewriting"""
  vals: dict[UOp, object] = {}
  for x in u.toposort():
    if x.op in (Ops.BUFFER, Ops.PARAM): v = env[x.arg.name]
    elif x.op is Ops.RANGE: v = env[f"r{x.arg[0]}"]
    elif x.op is Ops.CONST: v = x.arg
    elif x.op is Ops.STACK and len(x.src) == 0: v = None   # the shape arg of a variable
    elif x.op is Ops.WHERE:
      c, t, f = (vals[s] for s in x.src)
      v = Invalid if c is Invalid else (t if c else f)
    elif x.op is Ops.CAST:
      s = vals[x.src[0]]
      v = s if s is Invalid else bool(s) if x.dtype is dtypes.bool else int(s)
    elif x.op in python_alu:
      ops = [vals[s] for s in x.src]
      v = Invalid if any(o is Invalid for o in ops) else python_alu[x.op](*ops)
    else: raise RuntimeError(f"can't evaluate {x.op}")
    vals[x] = v
  return vals[u]

def same(a, b) -> bool:
  if a is Invalid or b is Invalid: return a is b
  return a == b

def sample_points(domains: dict[str, tuple[int, int]], rng: random.Random, n_random: int, exhaustive_max: int):
  names = sorted(domains)
  size = 1
  for lo, hi in domains.values(): size *= hi - lo + 1
  if size <= exhaustive_max:
    for vals in itertools.product(*[range(domains[k][0], domains[k][1]+1) for k in names]): yield dict(zip(names, vals))
    return
  yield {k: domains[k][0] for k in names}
  yield {k: domains[k][1] for k in names}
  for _ in range(n_random): yield {k: rng.randint(*domains[k]) for k in names}

def run_case(mode: str, vars_spec: str, expr: str) -> tuple[str, int]:
  ns, domains = parse_vars(vars_spec)
  if mode == V:
    vstr, estr = expr.split(" => ")
    valid, orig = build(vstr, ns), build(estr, ns)
    res = uop_given_valid(valid, orig)
  else:
    valid, orig = None, build(expr, ns)
    if mode == S: res = orig.simplify()
    elif mode == Y: res = graph_rewrite(orig, sym)
    else: raise ValueError(f"bad mode {mode!r}")
  # self check, deterministic per case
  rng = random.Random(zlib.crc32(f"{mode}|{vars_spec}|{expr}".encode()))
  checked = 0
  for pt in sample_points(domains, rng, n_random=48, exhaustive_max=600):
    if valid is not None and not evaluate(valid, pt): continue
    a, b = evaluate(orig, pt), evaluate(res, pt)
    if not same(a, b): raise AssertionError(f"tinygrad result {res.render(simplify=False)} disagrees at {pt}: {a} vs {b}")
    checked += 1
  if valid is not None and checked == 0:
    # the valid may be rarely true: search harder
    for _ in range(5000):
      pt = {k: rng.randint(*domains[k]) for k in domains}
      if not evaluate(valid, pt): continue
      a, b = evaluate(orig, pt), evaluate(res, pt)
      if not same(a, b): raise AssertionError(f"tinygrad result {res.render(simplify=False)} disagrees at {pt}: {a} vs {b}")
      checked += 1
    if checked == 0: raise AssertionError("no point satisfies the valid")
  render = res.render(simplify=False)
  if " | " in render or "\n" in render: raise AssertionError(f"render {render!r} can't be stored")
  return render, len(res.toposort())

HEADER = """\
# symbolic simplification cases, generated by tests/tools/gen_symbolic_cases.py from tinygrad {commit}. DO NOT EDIT.
# mode | vars | expr | tinygrad_render | tinygrad_nodes
#   symbolic: expr.simplify()   sym: graph_rewrite(expr, sym)   valid: "VALID => EXPR" -> uop_given_valid(VALID, EXPR)
# expressions build like tinygrad's python operators: a-b = a+b*-1, -a = a*-1, a>b = b<a, a>=b = (a<b).ne(True),
# a<=b = (b<a).ne(True), x.eq(y) = x.ne(y).ne(True), x.logical_not() = x.ne(True), x.valid(c) = c.where(x, Invalid),
# a.minimum(b) = ((a^-1).maximum(b^-1))^-1 (weakint). python folds literal-only subexpressions before they are UOps.
"""

def generate() -> tuple[str, dict[str, int], list[str]]:
  lines = [HEADER.format(commit=REFERENCE_COMMIT).rstrip("\n")]
  counts: dict[str, int] = {}
  dropped: list[str] = []
  seen: set[tuple[str, str, str]] = set()
  for family, cases in CASES:
    lines.append(f"# === {family} ===")
    counts[family] = 0
    for mode, vars_spec, expr in cases:
      key = (mode, vars_spec, expr)
      if key in seen: raise ValueError(f"duplicate case {key}")
      seen.add(key)
      # authoring errors (bad mode, var spec or grammar) are fatal, not dropped
      if mode not in (S, Y, V): raise ValueError(f"bad mode {mode!r} in {key}")
      if (mode == V) != (" => " in expr): raise ValueError(f"'VALID => EXPR' is for mode valid only: {key}")
      names = set(parse_vars(vars_spec)[0])
      for part in expr.split(" => "): check_grammar(part, names)
      try:
        render, nodes = run_case(mode, vars_spec, expr)
      except Exception as e:  # noqa: BLE001  tinygrad raised or disagreed with itself
        msg = f"{mode} | {vars_spec} | {expr} ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
        dropped.append(msg)
        lines.append(f"# DROPPED: {msg}")
        continue
      lines.append(f"{mode} | {vars_spec} | {expr} | {render} | {nodes}")
      counts[family] += 1
  return "\n".join(lines) + "\n", counts, dropped

def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--check", action="store_true", help="regenerate into a temp file and diff against the committed one")
  ap.add_argument("--out", default=DEFAULT_OUT, help=f"case file (default {DEFAULT_OUT})")
  args = ap.parse_args()

  st = time.perf_counter()
  text, counts, dropped = generate()
  et = time.perf_counter() - st
  for fam, n in counts.items(): print(f"  {n:4d}  {fam}", file=sys.stderr)
  print(f"{sum(counts.values())} cases in {et:.2f} s, {len(dropped)} dropped", file=sys.stderr)
  for d in dropped: print(f"DROPPED: {d}", file=sys.stderr)

  if args.check:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
      f.write(text)
      tmp = f.name
    try:
      with open(args.out) as f: old = f.read()
    except FileNotFoundError: old = ""
    with open(tmp) as f: new = f.read()
    os.unlink(tmp)
    diff = list(difflib.unified_diff(old.splitlines(True), new.splitlines(True), args.out, "regenerated"))
    if diff:
      sys.stdout.writelines(diff)
      print(f"{args.out} is out of date", file=sys.stderr)
      return 1
    print(f"{args.out} is up to date", file=sys.stderr)
    return 0

  os.makedirs(os.path.dirname(args.out), exist_ok=True)
  with open(args.out, "w") as f: f.write(text)
  print(f"wrote {args.out}", file=sys.stderr)
  return 0

if __name__ == "__main__":
  sys.exit(main())
