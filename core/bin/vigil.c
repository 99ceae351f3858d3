/* vigil: placeholder until the client lands (issue 3, in progress). */
int
main(void)
{
  return 0;
}
