/**
 * Signal policy for machined.
 *
 * - As PID 1 the kernel drops every signal whose action is the default, so without listeners SIGTERM, SIGINT
 *   (ctrl-alt-del) and SIGPWR would be ignored: we must listen to them ourselves.
 * - SIGUSR1 with no listener makes Node 20 open the inspector on 127.0.0.1:9229, i.e. code execution in PID 1
 *   for anything on loopback (Node 20 has no --disable-sigusr1). A SIGUSR1 listener suppresses that, so it is
 *   installed by `guardInspectorSignal()` as early as possible and never removed.
 */

export type SignalAction = "shutdown" | "reboot";
export type HandledSignal = "SIGTERM" | "SIGINT" | "SIGPWR" | "SIGHUP";

export const HANDLED_SIGNALS: readonly HandledSignal[] = ["SIGTERM", "SIGINT", "SIGPWR", "SIGHUP"];

let inspectorGuard: (() => void) | undefined;

/** Idempotent; the listener only logs, and is left installed for the life of the process. */
export function guardInspectorSignal(log: (msg: string) => void = () => {}): void {
  if (inspectorGuard) return;
  inspectorGuard = () => log("SIGUSR1 ignored (inspector activation is disabled)");
  process.on("SIGUSR1", inspectorGuard);
}

/**
 * Default meaning of each signal. As PID 1 follow init conventions: SIGINT is the kernel's ctrl-alt-del and
 * SIGHUP a restart request (reboot); SIGTERM and SIGPWR (power failure) power off. In local mode there is no
 * machine to reboot: every signal just stops the agent (ctrl-c, closed terminal, kill).
 */
export function defaultSignalActions(isPid1: boolean): Record<HandledSignal, SignalAction> {
  return isPid1
    ? { SIGTERM: "shutdown", SIGINT: "reboot", SIGPWR: "shutdown", SIGHUP: "reboot" }
    : { SIGTERM: "shutdown", SIGINT: "shutdown", SIGPWR: "shutdown", SIGHUP: "shutdown" };
}

export interface SignalHandlers {
  onShutdown(signal: HandledSignal): void;
  onReboot(signal: HandledSignal): void;
  /** a signal arriving after a request was already made (e.g. a second ctrl-c); local mode may force exit here */
  onRepeat?(signal: HandledSignal, first: SignalAction): void;
  isPid1?: boolean;
  actions?: Partial<Record<HandledSignal, SignalAction>>;
  log?: (msg: string) => void;
}

/** Installs the listeners (and the SIGUSR1 guard). Returns a function that removes them, except the guard. */
export function installSignalHandlers(h: SignalHandlers): () => void {
  const log = h.log ?? (() => {});
  guardInspectorSignal(log);
  const actions = { ...defaultSignalActions(h.isPid1 ?? process.pid === 1), ...h.actions };
  let first: SignalAction | undefined;
  const listeners = HANDLED_SIGNALS.map((signal) => {
    const listener = () => {
      const action = actions[signal];
      if (first !== undefined) {
        log(`${signal} received again (${first} already requested)`);
        h.onRepeat?.(signal, first);
        return;
      }
      first = action;
      log(`${signal} received: ${action} requested`);
      if (action === "reboot") h.onReboot(signal);
      else h.onShutdown(signal);
    };
    process.on(signal, listener);
    return [signal, listener] as const;
  });
  return () => {
    for (const [signal, listener] of listeners) process.off(signal, listener);
  };
}
