#include "commands.h"
namespace brisk::tools {
int cmd_run(int, char**) { return 2; }
}
