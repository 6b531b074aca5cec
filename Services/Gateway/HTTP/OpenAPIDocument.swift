import AviaryJSON
import ServiceKit

/// `GET /openapi.json`: the gateway's HTTP surface as OpenAPI 3.1. The JSON-RPC methods behind
/// `/rpc` are described by `GET /rpc/discover` (OpenRPC), which this document points to.
enum OpenAPIDocument {
    static let document: JSONValue = [
        "openapi": "3.1.0",
        "info": [
            "title": "Aviary public edge",
            "version": .string(AviaryVersion.version),
            "description": """
                JSON-RPC 2.0 over HTTP and WebSocket for every public method of Aviary's services (see /rpc/discover), \
                and media over plain HTTP. Send the access token as Authorization: Bearer <token>.
                """,
        ],
        "components": [
            "securitySchemes": ["bearer": ["type": "http", "scheme": "bearer", "bearerFormat": "JWT"]],
            "schemas": [
                "Error": [
                    "type": "object",
                    "properties": [
                        "error": [
                            "type": "object",
                            "properties": [
                                "status": ["type": "integer"], "message": ["type": "string"],
                                "code": ["type": "integer"], "data": ["type": "object"],
                            ],
                            "required": ["status", "message"],
                        ]
                    ],
                ],
                "JSONRPCMessage": [
                    "description": "A JSON-RPC 2.0 request, response, or a batch (an array) of them.",
                    "oneOf": [["type": "object"], ["type": "array", "items": ["type": "object"]]],
                ],
                "Media": [
                    "type": "object",
                    "properties": [
                        "id": ["type": "string"], "url": ["type": "string"], "contentType": ["type": "string"],
                        "byteSize": ["type": "integer"], "width": ["type": ["integer", "null"]],
                        "height": ["type": ["integer", "null"]], "durationMs": ["type": ["integer", "null"]],
                    ],
                    "required": ["id", "url", "contentType", "byteSize"],
                ],
            ],
            "responses": [
                "Error": ["description": "Not a JSON-RPC answer", "content": json(ref("Error"))],
            ],
        ],
        "security": [["bearer": []], [:]],
        "paths": [
            "/rpc": [
                "post": [
                    "summary": "One JSON-RPC request or a batch; the answer in the body (200 for every JSON-RPC answer).",
                    "requestBody": ["required": true, "content": json(ref("JSONRPCMessage"))],
                    "responses": [
                        "200": ["description": "The JSON-RPC answer", "content": json(ref("JSONRPCMessage"))],
                        "204": ["description": "Only notifications were sent: nothing to answer"],
                        "400": ["description": "The body is not JSON", "content": json(ref("JSONRPCMessage"))],
                        "413": errorRef, "429": errorRef,
                    ],
                ],
                "get": [
                    "summary": """
                        Upgrade to a WebSocket: one JSON-RPC message per text message both ways, many calls in flight, \
                        subscriptions' events pushed. gateway.authenticate {token} sets or refreshes the socket's token.
                        """,
                    "responses": [
                        "101": ["description": "Switching protocols"], "401": errorRef, "404": errorRef, "426": errorRef,
                        "429": errorRef,
                    ],
                ],
            ],
            "/rpc/discover": [
                "get": [
                    "summary": "One OpenRPC document of every public method of the seven services.",
                    "responses": ["200": ["description": "OpenRPC 1.3", "content": json(["type": "object"])]],
                ]
            ],
            "/media": [
                "post": [
                    "summary": "Upload a file: the body is the file, Content-Type its type, Content-Length its size.",
                    "parameters": [
                        query("purpose", required: true, "avatar, tweet or message"),
                        query("conversationId", required: false, "the conversation, for purpose=message"),
                    ],
                    "requestBody": [
                        "required": true,
                        "content": [
                            "image/*": ["schema": ["type": "string", "contentEncoding": "binary"]],
                            "video/*": ["schema": ["type": "string", "contentEncoding": "binary"]],
                        ],
                    ],
                    "responses": [
                        "201": ["description": "The stored Media", "content": json(ref("Media"))],
                        "401": errorRef, "411": errorRef, "413": errorRef, "415": errorRef, "422": errorRef,
                        "429": errorRef, "503": errorRef,
                    ],
                ]
            ],
            "/media/{id}": [
                "get": [
                    "summary": "The file's bytes, served by the media service: a 307 to its URL (query, and so signatures, kept).",
                    "parameters": [
                        ["name": "id", "in": "path", "required": true, "schema": ["type": "string", "pattern": "^[0-9]{1,20}$"]]
                    ],
                    "responses": ["307": ["description": "Where the media service serves it"], "404": errorRef],
                ]
            ],
            "/openapi.json": [
                "get": [
                    "summary": "This document.",
                    "responses": ["200": ["description": "OpenAPI 3.1", "content": json(["type": "object"])]],
                ]
            ],
        ],
    ]

    private static let errorRef: JSONValue = ["$ref": "#/components/responses/Error"]

    private static func ref(_ name: String) -> JSONValue { ["$ref": .string("#/components/schemas/\(name)")] }

    private static func json(_ schema: JSONValue) -> JSONValue { ["application/json": ["schema": schema]] }

    private static func query(_ name: String, required: Bool, _ description: String) -> JSONValue {
        ["name": .string(name), "in": "query", "required": .bool(required), "description": .string(description), "schema": ["type": "string"]]
    }
}
