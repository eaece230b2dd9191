// The `redlock` command-line tool (filled in by the CLI issue).
#include <iostream>

int main()
{
    std::cerr << "redlock: not implemented yet\n";
    return 64;
}
