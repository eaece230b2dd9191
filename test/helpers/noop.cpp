// The smallest helper process: exits with the status given as its first argument (tests of the harness).
#include <cstdlib>

int main(int argc, char** argv)
{
    return argc > 1 ? std::atoi(argv[1]) : 0;
}
