//! ISO 4217 currency codes (the active list, with the funds and special codes), so that an
//! ExchangeRate naming something else is refused when it is written, not when its handler runs.

const CODES: &str = "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB \
BOV BRL BSD BTN BWP BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK \
DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD \
IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD \
MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN \
PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL THB TJS \
TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST XAF XAG XAU XBA \
XBB XBC XBD XCD XCG XDR XOF XPD XPF XPT XSU XTS XUA XXX YER ZAR ZMW ZWG ZWL";

/// Whether `code` is an ISO 4217 currency code.
///
/// ```
/// assert!(exchange_rate::currencies::is_iso_4217("USD"));
/// assert!(!exchange_rate::currencies::is_iso_4217("usd"));
/// assert!(!exchange_rate::currencies::is_iso_4217("ABC"));
/// ```
pub fn is_iso_4217(code: &str) -> bool {
    code.len() == 3 && CODES.split_ascii_whitespace().any(|c| c == code)
}
