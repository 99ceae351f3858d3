// PLACEHOLDER written by the setup helper of issue 23: the hook helper
// writes the real OpenCode plugin here (it replaces this whole file).
//
// `vigil setup opencode` embeds this file in the vigil binary at build time
// (cmake/embed.cmake) and writes it out as vigil.js in OpenCode's plugin
// directory (.opencode/plugin/ of the project, or
// ~/.config/opencode/plugin/). Every "@VIGIL@" in it, with its quotes, is
// replaced by the absolute path of the vigil that ran setup, written as a
// JavaScript string, so the plugin runs that vigil:
//
//   const VIGIL = "@VIGIL@";   // becomes "/usr/local/bin/vigil"
//
// This placeholder does nothing: it only makes OpenCode load a plugin
// named vigil, which the setup tests check.
const VIGIL = "@VIGIL@";

export const VigilPlugin = async () => ({});
