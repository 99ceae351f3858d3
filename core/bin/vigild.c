/* vigild: placeholder until the engine lands (issue 3, in progress). */
int
main(void)
{
  return 0;
}
