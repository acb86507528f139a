import BLEConfiguration
import BLEDomain
import BLEHost
import BLEPublishing
import BLETransport
import Foundation

/// Enrolment through the broker: `<prefix>/<gateway>/enrol` starts one on the running gateway's controller (beside
/// its scanning and links), answers its comparison or cancels it; each step and the outcome go to `…/enrol/state`.
/// Authorised like write commands: whoever may publish on the gateway's command topics (the broker's ACL).
extension GatewayRuntime {
    func followEnrolments() -> Task<Void, Never>? {
        let stream: AsyncStream<MQTTMessage>
        do {
            stream = try client.subscribe(readings.topics.enrol, qos: .atLeastOnce)
        } catch {
            logger.error("enrolment: cannot subscribe to \(readings.topics.enrol): \(error)")
            return nil
        }
        return Task { [self] in
            // A retained command would start an enrolment at every start: only live ones are taken.
            for await message in stream where !message.retain { enrolmentCommand(message.payload) }
            // Shutdown: the enrolment running stops advertising and ends its link before the controller goes.
            await enrolments.stop()
        }
    }

    func enrolmentCommand(_ payload: [UInt8]) {
        switch EnrolmentCommand.parse(payload) {
        case .failure(let refusal):
            say(.refused(refusal.message), id: refusal.id)
        case .success(.start(let start)):
            let started = enrolments.start(id: start.id) { [self] in await enrol(start) }
            if !started {
                let running = enrolments.running.map { $0.map { " (id \"\($0)\")" } ?? "" } ?? ""
                say(.refused("an enrolment is already running\(running)"), id: start.id)
            }
        case .success(.confirm(let id, let yes)):
            if !enrolments.confirm(id: id, yes) { say(.refused("no comparison of this id is waiting"), id: id) }
        case .success(.cancel(let id)):
            if !enrolments.cancel(id: id) { say(.refused("no enrolment of this id is running"), id: id) }
        }
    }

    private func enrol(_ start: EnrolmentCommand.Start) async {
        var options = Enrolment.Options()
        options.name = start.advertise
        options.timeout = .milliseconds(Int64(start.timeoutSeconds * 1000))
        let id = start.id
        logger.info("enrolment\(id.map { " \($0)" } ?? ""): \(start.name), advertising as \"\(start.advertise)\"")
        do {
            let identity = try await peripherals.enrol(
                Enrolment(options: options, clock: clock, logger: logger),
                confirm: { [self] digits in
                    say(.compare(digits, awaiting: !start.accept), id: id)
                    return start.accept ? true : await enrolments.answer()
                },
                progress: { [self] progress in
                    switch progress {
                    case .advertising(let address, let name): say(.advertising(name: name, address: address), id: id)
                    case .connected(let peer): say(.connected(peer), id: id)
                    case .passkey(let passkey): say(.passkey(passkey), id: id)
                    case .paired: break
                    }
                })
            let entry = IdentityKeyFile.Entry(name: start.name, irk: identity.irk, address: identity.address)
            let change: IdentityKeyFile.Change
            do {
                change = try IdentityKeyFile.enrol(entry, at: configuration.identityKeysFile)
            } catch {
                // Not followed either: an identity the file does not keep would be forgotten at the next start.
                return say(.failed("paired with \(identity.address), but it could not be kept: \(error)"), id: id)
            }
            if let key = IdentityResolvingKey(octets: identity.irk, identity: identity.address) {
                pipeline.withLock { $0.enrolled(key) }
            }
            logger.notice("enrolment: \(start.name) (\(identity.address)) kept in \(configuration.identityKeysFile)")
            say(.enrolled(name: start.name, identity: identity, change: change), id: id)
        } catch let failed as Enrolment.Failed {
            // A cancel answers a waiting comparison no (EnrolmentDesk.answer), and the pairing may end on that refusal
            // (SMP 0x0C) before it sees the cancellation: the operator cancelled, so that is what it says.
            say(.failed(Task.isCancelled ? "cancelled" : failed.description), id: id)
        } catch is CancellationError {
            say(.failed("cancelled"), id: id)
        } catch {
            say(.failed("\(error)"), id: id)
        }
    }

    private func say(_ step: GatewayReadings.EnrolmentStep, id: String?) {
        recordState(readings.enrolment(step, id: id, ts: clock.unixTime(), synced: clockSynchronized()))
    }
}
