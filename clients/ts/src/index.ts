export * from "./types.js";
export * from "./errors.js";
export { PathdClient, EventStream } from "./client.js";
export type { ClientOptions, CallOptions, MapReadOptions, StreamOptions, PutResult } from "./client.js";
export { DecodedFlowField, watchFlowField, STEPS, GOAL, UNREACHABLE } from "./flowfield.js";
export type { FlowFieldUpdate } from "./flowfield.js";
export { readFrames } from "./sse.js";
export type { SseFrame } from "./sse.js";
