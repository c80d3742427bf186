package frameworks

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/idemkit/idem/server"
)

// Echo is the payments handler in echo's idiom: a refusal is returned as
// an error, which echo's HTTPErrorHandler writes.
func (p *Payments) Echo(c echo.Context) error {
	a, err := p.Charge(c.Request())
	if err != nil {
		if refusal, ok := err.(*Answer); ok {
			return echo.NewHTTPError(refusal.Status, refusal)
		}
		return err
	}
	return c.JSONBlob(a.Status, a.Body)
}

// EchoLayer is the idempotency layer as a native echo middleware. Unlike
// echo.WrapMiddleware(layer.Handler), it writes the error a handler
// returns (through echo's HTTPErrorHandler) inside the layer, so the
// layer captures and judges the answer the client gets, and it puts the
// request's own response back once the layer is done.
func EchoLayer(layer *server.Middleware) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req, resp := c.Request(), c.Response()
			layer.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c.SetRequest(r)
				c.SetResponse(echo.NewResponse(w, c.Echo()))
				if err := next(c); err != nil {
					c.Error(err)
				}
			})).ServeHTTP(resp, req)
			c.SetRequest(req)
			c.SetResponse(resp)
			return nil
		}
	}
}
