/*
 * vigil's version and the protocol's api level (docs/protocol.md section 5,
 * `ping`). A header of its own so that what only wants to print them (the
 * command-line client) needs nothing else of the engine.
 */
#ifndef VIGIL_VERSION_H
#define VIGIL_VERSION_H

#define VIGIL_VERSION "0.1.0"
#define VIGIL_API_LEVEL 1

#endif
