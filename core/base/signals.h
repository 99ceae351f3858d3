/*
 * Signal names: the one table that maps numbers to "SIGTERM"-style names
 * and back, for messages, events, envelopes and the wire (where a signal is
 * always named, since numbers differ between architectures).
 */
#ifndef VIGIL_SIGNALS_H
#define VIGIL_SIGNALS_H

/* The name of a signal ("SIGTERM"), or NULL for a number not in the table. */
const char *signals_name(int sig);

/* The number of a signal named "SIGTERM" or "TERM" (any case), or -1. */
int signals_number(const char *name);

#endif
