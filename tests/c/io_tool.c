#include <cmx/cmx.h>
int main(void){return 0;}
