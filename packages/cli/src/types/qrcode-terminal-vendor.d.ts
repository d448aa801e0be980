// qrcode-terminal ships its QR generator (Kazuhiko Arase's, MIT) without types; these are the parts src/qr.ts uses.
declare module 'qrcode-terminal/vendor/QRCode/index.js' {
  export default class QRCode {
    constructor(typeNumber: number, errorCorrectLevel: number);
    addData(data: string): void;
    make(): void;
    getModuleCount(): number;
    isDark(row: number, col: number): boolean;
  }
}

declare module 'qrcode-terminal/vendor/QRCode/QRErrorCorrectLevel.js' {
  const levels: { readonly L: 1; readonly M: 0; readonly Q: 3; readonly H: 2 };
  export default levels;
}
