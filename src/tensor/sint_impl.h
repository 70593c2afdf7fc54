#pragma once
// tg::sint <-> UOp (a weakint CONST or expression), and symbolic shapes and pairs both ways
#include "tg/sint.h"
#include "uop/uop.h"

namespace tg {

UOp to_uop(const sint& s);
sint to_sint(const UOp& u);
SShape to_sshape(const SymShape& s);
SymShape to_symshape(const SShape& s);
std::vector<std::pair<UOp, UOp>> to_upairs(const SymPairs& p);

}  // namespace tg
