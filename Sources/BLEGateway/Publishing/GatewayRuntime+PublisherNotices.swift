import BLEPublishing

/// The spool publisher's notices, followed for as long as the gateway runs: each is logged, and a refusal episode's
/// start and end are told on the status topic too (the publisher's own record of the reason and the start, not the
/// notice's error, which is only the first of the episode).
extension GatewayRuntime {
    func followPublisherNotices() async {
        for await notice in publisher.notices {
            switch notice {
            case .rejected(let r, let e):
                logger.error(
                    """
                    reading seq \(r.seq) on \(r.reading.topic) cannot be delivered (\(e)): kept in the spool's dead \
                    letters (blegateway spool dead-letters)
                    """)
                continue
            case .refusal(.began(let family, let r, let e)):
                logger.error(
                    """
                    broker refuses publishes on \(family)/… (\(MQTTReasonCode(rawValue: e.code)), first seq \(r.seq) \
                    on \(r.reading.topic)): kept in the spool and sent again with backoff; other topics go on
                    """)
            case .refusal(.ended(let family, expired: false)):
                logger.notice("broker accepts publishes on \(family)/… again; the readings it refused are being sent")
            case .refusal(.ended(let family, expired: true)):
                logger.notice("no reading refused on \(family)/… is left to send (they expired); refusal ended")
            }
            recordState(
                readings.status(
                    online: true, reason: nil, refusal: publisher.statistics.refusal, ts: clock.unixTime(),
                    synced: clockSynchronized()))
        }
    }
}
