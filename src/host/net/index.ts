export * from "./types.js";
export * from "./names.js";
export * from "./ip.js";
export * from "./links.js";
export * from "./addresses.js";
export * from "./routes.js";
export * from "./resolvers.js";
export * from "./hostname.js";
