#include "builder/cli.hpp"

int main(int argc, char** argv) { return gb::cli::run(argc, argv); }
