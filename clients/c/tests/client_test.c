#include "vigil/client.h"
int main(void){return 0;}
