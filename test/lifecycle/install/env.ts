/** Imported first by the flow tests: a short simulated reboot (read when node.ts loads). */
process.env.MACHINED_SIMULATED_REBOOT_MS ??= "50";
export {};
