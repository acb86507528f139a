/// The office every presence test and the fleet's failover drill stand in: four rooms on one floor and a gateway in
/// three of them, as a site description (docs/PRESENCE.md). One copy, for the fleet's unit tests and the end-to-end
/// suites alike.
public enum OfficeSite {
    public static let yaml = """
        floors: [{id: ground, name: Ground floor, z: 0}]
        rooms:
          - {id: lobby, name: Lobby, floor: ground, polygon: [[0, 0], [8, 0], [8, 9], [0, 9]]}
          - {id: lab, name: Lab, floor: ground, polygon: [[14, 0], [26, 0], [26, 9], [14, 9]]}
          - {id: corridor, name: Corridor, floor: ground, polygon: [[0, 9], [26, 9], [26, 12], [0, 12]]}
          - {id: kitchen, name: Kitchen, floor: ground, polygon: [[6, 12], [14, 12], [14, 20], [6, 20]]}
        gateways:
          - {id: gw-lobby, position: [4, 4, 2.5], room: lobby}
          - {id: gw-lab, position: [20, 5, 2.5], room: lab}
          - {id: gw-kitchen, position: [10, 16, 2.5], room: kitchen}
        """
}
