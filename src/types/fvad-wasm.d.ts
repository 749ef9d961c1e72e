// @echogarden/fvad-wasm ships an Emscripten module factory without type declarations.
declare module '@echogarden/fvad-wasm' {
  const factory: () => Promise<unknown>;
  export default factory;
}
