// placeholder main job; the lead replaces this with the real demo
#include <cstdio>
int main() { std::puts("tinygrad.cpp"); }
